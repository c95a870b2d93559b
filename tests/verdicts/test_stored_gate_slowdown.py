"""A stored baseline with measured run-to-run spread catches a real slowdown of the CPU
reference (engine-marked): the same suite, launched for real twice, first records its
baseline (trials give the between-run spread), then runs on a build whose every forward pass
takes five times as long (tests/stand_ins/slow_forward, factor 4: start-up and load untouched,
outputs the same), and the stored gate on time to first token fails it.

The slowdown is relative to the host's own forward pass, so the fold change does not depend on
the host. Its first versions changed a real flag instead (``--chunked-prefill-size`` 16, then
2): +409% on one host but +86.5% on an AVX2-only host, inside the gate, and the chunked prefill
made the slowed run cost minutes. Sized to what the assertion needs: 3 trials (the spread's
smallest honest sample), 2 requests of 64 prompt tokens and 2 output tokens.

The baseline is recorded from the session's shared reference server (tests/conftest.py
cpu_server, the cpu target's own launch of the same build, attached with --llm-endpoint): a
recording needs a live server of the build, not a start of its own (issue 20). Its prompts'
seed is this test's own, so no other test's requests warmed the shared server's prefix cache
for them: the recording's first trial is as cold as the slowed server's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import suite_head

SLOW_FORWARD = Path(__file__).resolve().parents[1] / "stand_ins" / "slow_forward"
SLOWED = (f'env = {{ PYTHONPATH = "{SLOW_FORWARD}", ROCM_LLM_SLOW_FORWARD = "4" }}\n')

# Measures speed (or a sending rate): nothing else may run beside it (tests/conftest.py).
pytestmark = [pytest.mark.engine, pytest.mark.alone]

# ENV: the reference profile's env line (SLOWED) or nothing, after its flags.
SUITE = suite_head("slow", {"reference": {"context-length": 2048, "random-seed": 1234}},
                   engine="sglang", targets=["cpu"], default_profile="reference") + """\
ENV

[workloads.decode]
kind = "single_stream"
input_tokens = 64
output_tokens = 2
requests = 2
warmup = 1
trials = 3
seed = 1709

[checks.decode_ttft]
workload = "decode"
metric = "ttft_p50_s"
max = 60.0
source = "test ceiling"
baseline = "ceiling"
# A build whose time to first token doubled passes this, so a busy shared machine does not
# fail it; the fivefold forward passes below are far past it.
baseline_tolerance = 1.0
"""
TESTS = {"test_slow.py": "def test_check(llm_check, llm_judge):\n    llm_judge(llm_check)\n"}


def run(pytester: pytest.Pytester, suite_dir, env: str, *args: str) -> tuple[
        pytest.RunResult, dict]:
    suite_dir(SUITE.replace("ENV\n", env), TESTS, name="slow")
    results = pytester.path / "results.json"
    result = pytester.runpytest_subprocess(
        "--rocm-target", "cpu", "-p", "no:cacheprovider", "--llm-results", str(results),
        "--llm-baselines", str(pytester.path / "baselines"), *args, "suites")
    return result, json.loads(results.read_text())


def test_a_real_slowdown_fails_the_stored_gate(pytester: pytest.Pytester, suite_dir,
                                               engine_env: dict, cpu_server: str) -> None:
    recorded, _ = run(pytester, suite_dir, "", "--llm-regen-all", "--llm-endpoint", cpu_server)
    assert recorded.ret == 0, recorded.stdout.str()[-3000:]
    stored = json.loads((pytester.path / "baselines/cpu/slow.json").read_text())
    entry = stored["metrics"]["decode_ttft"]
    assert entry["spread_kind"] == "between_runs" and entry["runs"] == 3, entry
    assert entry["spread"] is not None

    slowed, doc = run(pytester, suite_dir, SLOWED)
    (row,) = doc["verdicts"]
    assert row["check"] == "decode_ttft" and row["status"] == "fail", row
    assert row["measured"] > 2.0 * entry["value"], (row["measured"], entry["value"])
    slowed.stdout.fnmatch_lines(["*decode_ttft*FAIL*"])
    assert slowed.ret == pytest.ExitCode.TESTS_FAILED
