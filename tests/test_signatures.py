"""Known failure signatures, each against a log excerpt written for this test in the shape
the failure produces, and a clean CPU-reference startup log that must match none."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rocm_llm.signatures import load, scan_text

EXCERPTS = {
    "spec-head-weight-shape": """
[2026-07-02 10:11:12 TP3] Load weight begin. avail mem=250.10 GB
[2026-07-02 10:11:40 TP3] Scheduler hit an exception: Traceback (most recent call last):
RuntimeError: model.layers.78.mlp.shared_experts.gate_up_proj: shape mismatch: checkpoint
  torch.Size([4096, 6144]) (bf16) vs parameter torch.Size([4096, 3072]) (mxfp4) in the nextn layer
""",
    "weight-shape-mismatch": """
  File "sglang/srt/model_loader/weight_utils.py", line 512, in default_weight_loader
AssertionError: param.shape torch.Size([2048, 768]) does not match loaded_weight.shape
""",
    "cuda-header-on-rocm": """
[2026-07-03 08:00:01] Compiling fused_multi_step_metadata for gfx950 ...
/tmp/jit/fused_metadata.cu:3:10: fatal error: 'cuda_runtime.h' file not found
    3 | #include <cuda_runtime.h>
""",
    "jit-compile-failure": """
FAILED: fused_metadata.hip.o
ninja: build stopped: subcommand failed.
""",
    "moe-untuned-fallback": """
[2026-07-04 12:00:00 TP0] Using default MoE kernel config. Performance might be sub-optimal! \
Config file not found at /sgl/configs/E=256,N=256,device_name=AMD_Instinct_MI355X,dtype=fp4.json
""",
    "kv-cache-oom": """
[2026-07-05 09:00:00 TP0] RuntimeError: Not enough memory. Please try to increase \
--mem-fraction-static.
""",
}

CLEAN_CPU_STARTUP = """
[2026-11-29 20:42:59] Load weight begin. avail mem=20.99 GB
[2026-11-29 20:43:00] Load weight end. elapsed=0.46 s, type=LlamaForCausalLM, avail mem=20.77 GB
[2026-11-29 20:43:05] KV Cache is allocated. dtype: torch.float16, #tokens: 65536, K size: 0.70 GB
[2026-11-29 20:43:05] Memory pool end. avail mem=19.17 GB
[2026-11-29 20:43:05] max_total_num_tokens=65536, chunked_prefill_size=4096, max_prefill_tokens=16384
[2026-11-29 20:43:06] Engine startup timings (s): load_weight=0.46, kv_cache_allocation=2.79
[2026-11-29 20:43:06] INFO:     Uvicorn running on http://127.0.0.1:31000 (Press CTRL+C to quit)
[2026-11-29 20:43:07] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00
[2026-11-29 20:43:08] The server is fired up and ready to roll!
"""


def test_every_builtin_signature_has_an_excerpt() -> None:
    assert {s.id for s in load()} == set(EXCERPTS)


@pytest.mark.parametrize("sig_id", sorted(EXCERPTS))
def test_signature_names_its_failure(sig_id: str) -> None:
    hits = scan_text(EXCERPTS[sig_id], load())
    assert sig_id in [h.signature.id for h in hits], [h.describe() for h in hits]
    hit = next(h for h in hits if h.signature.id == sig_id)
    text = hit.describe()
    assert hit.signature.title in text and "->" in text and f"log line {hit.line_no}" in text


def test_specific_signature_is_reported_before_the_generic_one() -> None:
    hits = scan_text(EXCERPTS["spec-head-weight-shape"], load())
    assert hits[0].signature.id == "spec-head-weight-shape"


def test_clean_startup_matches_nothing() -> None:
    assert scan_text(CLEAN_CPU_STARTUP, load()) == []


def test_user_file_extends_and_replaces(tmp_path: Path) -> None:
    extra = tmp_path / "mine.toml"
    extra.write_text('''
[[signature]]
id = "kv-cache-oom"
title = "my OOM"
pattern = "boom"
advice = "shrink"

[[signature]]
id = "aiter-miss"
title = "aiter tuned-config miss"
pattern = "no FlyDSL instance"
severity = "warning"
advice = "tune the shape"
''')
    sigs = {s.id: s for s in load(extra)}
    assert sigs["kv-cache-oom"].title == "my OOM" and "aiter-miss" in sigs
    assert "moe-untuned-fallback" in sigs


@pytest.mark.parametrize(("body", "expected"), [
    ('[[signature]]\nid = "x"\ntitle = "t"\npattern = "("\nadvice = "a"\n',
     "key 'signature[0].pattern': not a valid regular expression"),
    ('[[signature]]\nid = "x"\ntitle = "t"\npattern = "a"\n', "key 'signature[0].advice': is "
                                                               "required"),
    ('[[signature]]\nid = "x"\ntitle = "t"\npattern = "a"\nadvice = "a"\nseverity = "fatal"\n',
     "'fatal' is not one of error, warning"),
    ('[[signature]]\nid = "x"\ntitle = "t"\npattern = "a"\nadvice = "a"\nregex = "b"\n',
     "key 'signature[0].regex': unknown key"),
])
def test_bad_user_file_is_a_usage_error(pytester: pytest.Pytester, body: str,
                                        expected: str) -> None:
    bad = pytester.path / "bad.toml"
    bad.write_text(body)
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--llm-signatures", str(bad))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected in result.stderr.str()
