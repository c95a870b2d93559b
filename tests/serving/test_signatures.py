"""Known failure signatures, each against a log excerpt in the shape the failure produces
(quoted from the public issue where it shows one), and healthy logs that must match none: a
real CPU-reference server log and healthy GPU log lines that share words with the failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rocm_llm.serving.signatures import load, scan_text

EXCERPTS = {
    # sglang 0.5.23's own wording: srt/distributed/bootstrap.py (the TP memory balance check),
    # srt/distributed/device_communicators/pynccl_wrapper.py, srt/utils/watchdog.py
    "unbalanced-gpu-memory": """
[2026-08-20 11:01:42 TP5] Init torch distributed begin.
[2026-08-20 11:01:44 TP5] Scheduler hit an exception: Traceback (most recent call last):
RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. pre_model_load_memory=101.2, local_gpu_memory=270.1, local_gpu_memory * 0.9=243.1
""",
    "rccl-init-failure": """
[2026-08-20 11:01:43 TP2] Init torch distributed begin.
[2026-08-20 11:01:52 TP2] Scheduler hit an exception: Traceback (most recent call last):
    raise RuntimeError(f"NCCL error: {error_str}")
RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)
""",
    "scheduler-watchdog-timeout": """
[2026-08-20 11:04:41 TP0] Prefill batch, #new-seq: 1, #new-token: 8192, #cached-token: 0
[2026-08-20 11:09:41 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)
""",
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
    "aiter-moe-heuristic-fallback": """
[2026-08-20 11:02:13 TP0] [aiter] [fused_moe] no tuned FlyDSL config for ('gfx950', 256, 1, \
7168, 256, 256, 8, 'ActivationType.Silu', 'torch.bfloat16', 'torch.float4_e2m1fn_x2', \
'torch.float4_e2m1fn_x2', 'QuantType.per_1x32', True, False), using heuristic FlyDSL fallback \
(kn1='flydsl_moe1_afp4_wfp4_bf16_t32x128x256_w2', kn2='flydsl_moe2_afp4_wfp4_bf16_t32x128x256')
""",
    "aiter-moe-default-kernel": """
[2026-08-20 11:02:14 TP3] [aiter] [fused_moe] using 1stage default for ('gfx950', 256, 16384, \
6144, 2048, 32, 7, 'ActivationType.Silu', 'torch.bfloat16', 'torch.float8_e4m3fn', \
'torch.float8_e4m3fn', 'QuantType.per_1x128', True, False)
""",
    "aiter-gemm-untuned": """
[2026-08-20 11:02:15 TP1] [aiter] shape is M:6314, N:2048, K:2048, not found tuned config in \
/tmp/aiter_configs/a8w8_blockscale_tuned_gemm.csv, will use default config!
""",
    "stale-aiter-jit-module": """
  File "/app/aiter-test/aiter/ops/moe_op.py", line 597, in ck_moe_stage2_fwd
    ck_moe_stage2(...)
RuntimeError: Unsupported block_m value for moe heuristic dispatch: 16
""",
    "cuda-graph-capture-failed": """
[2026-07-22 03:10:42 TP0] Capture cuda graph begin. This can take up to several minutes.
Exception: Capture cuda graph failed: HIP error: an illegal memory access was encountered
Possible solutions:
1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)
""",
    "hicache-init-failure": """
[2026-08-11 14:20:05 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "sglang/srt/mem_cache/kv_cache_builder.py", line 81, in maybe_register_hicache_draft
  File "sglang/srt/mem_cache/hybrid_cache/hybrid_pool_assembler.py", line 936, in \
build_full_draft_pools
    if pool.layer_num == 0:
AttributeError: 'HybridLinearKVPool' object has no attribute 'layer_num'
""",
    "spec-draft-extend-crash": """
[2026-07-02 10:00:00 TP0] The server is fired up and ready to roll!
[2026-07-02 10:00:31 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "sglang/srt/speculative/eagle_worker_v2.py", line 402, in _draft_extend_for_decode
  File "sglang/srt/speculative/base_spec_worker.py", line 163, in prepare_for_draft_extend
  File "sglang/srt/layers/attention/dsa_backend.py", line 1198, in init_forward_metadata
AssertionError: All of them must not be None
""",
    "dsa-topk-v2-cuda-only": """
[2026-07-08 09:12:44 TP0] Capture cuda graph begin. This can take up to several minutes.
sgl_kernel/deepseek_v4/topk_impl.cuh:41:10: fatal error: 'cooperative_groups.h' file not found
   41 | #include <cooperative_groups.h>
""",
}

# More wordings of one failure: each must name its signature too.
VARIANTS = [
    ("moe-untuned-fallback", "[2026-08-11 09:00:00 TP0] Using default W8A8 Block FP8 kernel "
                             "config. Performance might be sub-optimal! Config file not found "
                             "at /sgl/configs/N=2112,K=7168,device_name=AMD_Instinct_MI355X.json"),
    ("moe-untuned-fallback", "Config file not found at /sgl/configs/triton_3_5_0/E=256,N=256.json. "
                             "Fallback to triton version 3.4.0 and use MoE kernel config from "
                             "/sgl/configs/triton_3_4_0/E=256,N=256.json. Performance might be "
                             "sub-optimal!"),
    ("aiter-moe-heuristic-fallback", "[aiter] [fused_moe] no tuned FlyDSL config for (256, 8, "
                                     "4096, 1536, 256, 6), using untuned a16wi4 fallback "
                                     "(kn1='flydsl_moe1_abf16_wint4', kn2='flydsl_moe2')"),
    ("aiter-moe-default-kernel", "[aiter] [fused_moe] using 2stage default for (304, 64, 4096, "
                                 "1536, 256, 6)"),
    ("aiter-gemm-untuned", "[aiter] shape is M:32, N:7168, K:2048 dtype='torch.bfloat16' "
                           "otype='torch.bfloat16' bias=False, scaleAB=False, bpreshuffle=True, "
                           "not found tuned config in /aiter/configs/bf16_tuned_gemm.csv, will "
                           "use default config! using hipblaslt solution:0"),
    ("cuda-graph-capture-failed", "Exception: Capture prefill CUDA graph failed: out of memory"),
    ("cuda-graph-capture-failed", "Exception: Capture frozen-KV MTP cuda graph failed: boom"),
    ("hicache-init-failure", "ValueError: HiRadixCache only supports MHA, MLA, and NSA (DSA) "
                             "models"),
    ("hicache-init-failure", "ValueError: Not enough host memory available. Requesting 40.00 GB "
                             "but only have 44.87 GB free. Please reduce the size of the "
                             "hierarchical cache."),
    ("dsa-topk-v2-cuda-only", "topk_v2.cuh:430:22: error: no member named 'this_cluster' in "
                              "namespace 'cooperative_groups'"),
    # sglang 0.5.23's own wording (srt/distributed/bootstrap.py, pynccl_wrapper.py, watchdog.py)
    ("unbalanced-gpu-memory", "RuntimeError: The memory capacity is unbalanced. Some GPUs may "
                              "be occupied by other processes. pre_model_load_memory=101.2, "
                              "local_gpu_memory=270.1, local_gpu_memory * 0.9=243.1"),
    ("rccl-init-failure", "RuntimeError: NCCL error: unhandled cuda error (run with "
                          "NCCL_DEBUG=INFO for details)"),
    ("scheduler-watchdog-timeout", "[2026-08-20 11:09:41 TP0] Scheduler watchdog timeout "
                                   "(self.watchdog_timeout=300, self.soft=False)"),
]

# Healthy GPU-run lines that share words with the failures above: none may match.
HEALTHY_LINES = [
    "[2026-08-20 11:02:14 TP0] [aiter] [fused_moe] using 2stage (kernelName1='moe_ck2stages_"
    "gemm1_256x32x64x128_1x4_MulABScale', kernelName2='moe_ck2stages_gemm2_256x32x128x128') "
    "for ('gfx950', 256, 64, 7168, 256, 256, 8)",
    "[aiter] shape is M:64, N:2048, K:2048, found padded_M: 64, N:2048, K:2048 is tuned on "
    "cu_num = 256 in /aiter/configs/a8w8_tuned_gemm.csv , kernel name is a8w8_rowwise_256x64!",
    "[2026-08-20 11:02:10 TP0] Using MoE kernel config from /sgl/configs/triton_3_4_0/E=256,"
    "N=256,device_name=AMD_Instinct_MI355X,dtype=fp8_w8a8.json.",
    "[2026-08-20 11:02:11 TP0] Falling back to default memory pool.",
    "[2026-08-20 11:03:00 TP0] Capture cuda graph begin. This can take up to several minutes.",
    "[2026-08-20 11:03:40 TP0] Capture cuda graph end. Time elapsed: 40.12 s. mem usage=2.1 GB.",
    "[2026-08-20 11:03:41 TP0] Capture draft extend CUDA graph begin. backend=aiter, bs=[1, 2]",
    "[2026-08-20 11:01:50 TP0] Allocating 120.00 GB host memory for hierarchical KV cache.",
    "[2026-08-20 11:01:51 TP0] Tree cache initialized: source=default impl=UnifiedRadixCache "
    "hybrid_swa=False hybrid_ssm=False hicache_attached=True",
    "[2026-08-20 11:01:40 TP0] [AR] Using AiterCustomAllreduce (AMD default)",
    "[2026-08-20 11:01:40 TP0] Cuda graph is disabled because of using torch native attention "
    "backend",
    "[2026-08-20 11:01:41 TP0] sglang is using nccl==2.21.5",
    "[2026-08-20 11:01:30] server_args=ServerArgs(tp_size=8, watchdog_timeout=300, "
    "soft_watchdog_timeout=None, enable_memory_saver=False)",
    "[2026-08-20 11:01:42 TP0] Memory pool end. avail mem=21.37 GB",
]

REAL_CPU_LOG = Path(__file__).parents[1] / "data" / "sglang-0.5.23-cpu-smollm2.log"

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


@pytest.mark.parametrize(("sig_id", "line"), VARIANTS)
def test_other_wordings_of_a_failure_name_it(sig_id: str, line: str) -> None:
    assert sig_id in [h.signature.id for h in scan_text(line, load())]


@pytest.mark.parametrize("line", HEALTHY_LINES)
def test_healthy_gpu_lines_match_nothing(line: str) -> None:
    assert [h.describe() for h in scan_text(line, load())] == []


def test_a_real_cpu_reference_server_log_matches_nothing() -> None:
    # Recorded from sglang 0.5.23 on CPU serving SmolLM2: its server_args line alone names
    # hicache, cuda graphs, aiter and MoE runner options.
    text = REAL_CPU_LOG.read_text()
    assert "The server is fired up and ready to roll!" in text
    assert [h.describe() for h in scan_text(text, load())] == []


def test_signatures_added_from_public_reports_cite_them() -> None:
    cited = {s.id: s.source for s in load() if s.source}
    assert set(cited) >= {"aiter-moe-heuristic-fallback", "aiter-moe-default-kernel",
                          "stale-aiter-jit-module", "cuda-graph-capture-failed",
                          "hicache-init-failure", "spec-draft-extend-crash",
                          "dsa-topk-v2-cuda-only"}
    assert all(source.startswith("https://github.com/") for source in cited.values())
    hit = scan_text(EXCERPTS["stale-aiter-jit-module"], load())[0]
    assert "https://github.com/ROCm/ATOM/pull/1665" in hit.describe()


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
source = "https://github.com/ROCm/aiter/issues/1"
''')
    sigs = {s.id: s for s in load(extra)}
    assert sigs["kv-cache-oom"].title == "my OOM" and "aiter-miss" in sigs
    assert sigs["aiter-miss"].source == "https://github.com/ROCm/aiter/issues/1"
    assert sigs["kv-cache-oom"].source == ""
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
