"""Long context, parity and stream checks against the real CPU sglang, through a suite run
attached (--llm-endpoint) to the session's shared reference server (tests/conftest.py
cpu_server): the checks read a live server's outputs and need none of its own; its start and
stop are the lifecycle tests' business.

sglang cannot speculate on CPU, so parity runs one plain server against itself: outputs
agree completely, and the run must still report that no speculation happened -- the gate
is never passed by a server that did not speculate.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import suite_head

pytestmark = pytest.mark.engine

SUITE = suite_head("correct", {"default": {"context-length": 4096}})

TESTS = """
import json, os
from dataclasses import asdict
from pathlib import Path

from pytest_rocm_llm.client.completions import Endpoint
from pytest_rocm_llm.correctness.runs import EvalRuns
from pytest_rocm_llm.correctness.long_context import LongContextConfig, run_long_context
from pytest_rocm_llm.correctness.parity import ParityConfig, natural_prompts
from pytest_rocm_llm.correctness.stream_consistency import check_streams_sync, eos_ids

OUT = Path(os.environ["CORRECT_OUT"])

def dump(name, value):
    (OUT / f"{name}.json").write_text(json.dumps(value, default=str))

def test_long_context(llm_server):
    tok = str(Path(llm_server.model_path) / "tokenizer.json")
    config = LongContextConfig("lc", "long_context", None, (512, 1536), samples=1,
                               max_tokens=24)
    r = run_long_context(config, Endpoint(llm_server.base_url), tok, print)
    dump("long_context", asdict(r))

def test_parity_against_itself(llm_server, tmp_path):
    config = ParityConfig("self", "parity", "default", "default", prompts=4, max_tokens=16)
    r = EvalRuns(tmp_path, None, None, None, print).get("correct", config,
                                                         lambda p: llm_server)
    dump("parity", asdict(r))

def test_streams(llm_server):
    tok = str(Path(llm_server.model_path) / "tokenizer.json")
    prompts = natural_prompts(tok, 3, 0)
    checks = check_streams_sync(Endpoint(llm_server.base_url), prompts, 24,
                                eos_ids(llm_server.model_path))
    dump("streams", [{"problems": c.problems, "violations": c.violations,
                      "full": c.full.token_ids, "streamed": c.streamed.token_ids,
                      "reported": c.streamed.completion_tokens, "eos": c.eos_count,
                      "finish": c.full.finish_reason} for c in checks])
"""


def test_long_context_parity_and_streams_on_real_sglang(pytester: pytest.Pytester, suite_dir,
                                                        engine_env, monkeypatch,
                                                        cpu_server: str) -> None:
    out = pytester.path / "out"
    out.mkdir()
    monkeypatch.setenv("CORRECT_OUT", str(out))
    suite_dir(SUITE, {"test_correct.py": TESTS}, name="correct")
    # ~20 requests (one sample of each long-context task and length: what the assertions
    # need); on a shared 2-core machine under load each took 1-3 min (measured).
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", "--llm-endpoint", cpu_server,
                                           "-s", timeout=3600)
    result.assert_outcomes(passed=3)

    # (a) long context: well-formed, and the server saw exactly the lengths asked for
    lc = json.loads((out / "long_context.json").read_text())
    assert lc["kind"] == "long_context" and lc["problems"] == [], lc["problems"]
    assert len(lc["records"]) == 3 * 2  # tasks x lengths
    assert all(r["prompt_tokens"] == r["length"] for r in lc["records"]), lc["records"]
    assert all(r["completion_tokens"] > 0 for r in lc["records"])
    for key in ("accuracy@512", "accuracy@1536", "degenerate@512", "degenerate@1536",
                "accuracy_min", "degenerate_outputs"):
        assert key in lc["metrics"], key
    assert 0.0 <= lc["metrics"]["accuracy_min"] <= 1.0
    assert any(d.startswith("accuracy by length: 512: ") for d in lc["details"])

    # (b) parity of a plain server with itself: full agreement, and still not a pass
    par = json.loads((out / "parity.json").read_text())
    assert par["metrics"]["prompts"] == 4 and par["metrics"]["agree_ratio"] == 1.0
    assert par["metrics"]["match_ratio"] == 1.0 and par["metrics"]["real_divergences"] == 0
    assert par["problems"] == [
        "the speculative server did not speculate: accept length None"], par["problems"]
    assert "accept_length" not in par["metrics"]

    # (c) TEST06 stream checks hold on the real server
    streams = json.loads((out / "streams.json").read_text())
    assert len(streams) == 3
    for s in streams:
        assert s["problems"] == [] and s["violations"] == [], s
        assert s["streamed"] == s["full"] and s["reported"] == len(s["streamed"])
        assert s["eos"] <= 1
