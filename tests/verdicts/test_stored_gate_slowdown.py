"""A stored baseline with measured run-to-run spread catches a real slowdown of the CPU
reference (engine-marked): the same suite, launched for real twice, first records its
baseline (trials give the between-run spread), then runs with one serving flag changed the way
a new build's default might change, and the stored gate fails it.

The change is sglang's ``--chunked-prefill-size 2``: the 128-token prompts are prefilled 2
tokens per step, 64 forward passes instead of one, so time to first token grows about fivefold
(+406%, 2.05 -> 10.36 s, gate <= 6.05 s, on a host with AVX2 only; 5 trials each side) while the
server is otherwise the same. The first version (chunks of 16, 256-token prompts, 3 trials) was
+409% on a faster host but only +86.5% on that one, inside its gate: the per-step cost has to
dominate the prompt's compute on every host. Decode speed is no use here: a 135M model's
decode step is bound by the Python serving loop, so fewer threads, another dtype or
dev mode do not slow it (see tests/plugin/test_paired_run.py)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SMOKE_MODEL

pytestmark = pytest.mark.engine

SUITE = f"""
[suite]
name = "slow"
engine = "sglang"
targets = ["cpu"]
default_profile = "reference"
{SMOKE_MODEL}
[profiles.reference]
flags = {{ "context-length" = 2048, "random-seed" = 1234 FLAGS}}

[workloads.decode]
kind = "single_stream"
input_tokens = 128
output_tokens = 4
requests = 2
warmup = 1
trials = 5
seed = 11

[checks.decode_ttft]
workload = "decode"
metric = "ttft_p50_s"
max = 60.0
source = "test ceiling"
baseline = "ceiling"
# A build whose time to first token doubled passes this, so a busy shared machine does not
# fail it; the fivefold change below is far past it.
baseline_tolerance = 1.0
"""
TESTS = {"test_slow.py": "def test_check(llm_check, llm_judge):\n    llm_judge(llm_check)\n"}


def run(pytester: pytest.Pytester, suite_dir, flags: str, *args: str) -> tuple[
        pytest.RunResult, dict]:
    suite_dir(SUITE.replace(" FLAGS", flags), TESTS, name="slow")
    results = pytester.path / "results.json"
    result = pytester.runpytest_subprocess(
        "--rocm-target", "cpu", "-p", "no:cacheprovider", "--llm-results", str(results),
        "--llm-baselines", str(pytester.path / "baselines"), *args, "suites")
    return result, json.loads(results.read_text())


def test_a_real_slowdown_fails_the_stored_gate(pytester: pytest.Pytester, suite_dir,
                                               engine_env: dict) -> None:
    recorded, _ = run(pytester, suite_dir, "", "--llm-regen-all")
    assert recorded.ret == 0, recorded.stdout.str()[-3000:]
    stored = json.loads((pytester.path / "baselines/cpu/slow.json").read_text())
    entry = stored["metrics"]["decode_ttft"]
    assert entry["spread_kind"] == "between_runs" and entry["runs"] == 5, entry
    assert entry["spread"] is not None

    slowed, doc = run(pytester, suite_dir, ', "chunked-prefill-size" = 2')
    (row,) = doc["verdicts"]
    assert row["check"] == "decode_ttft" and row["status"] == "fail", row
    assert row["measured"] > 2.0 * entry["value"], (row["measured"], entry["value"])
    slowed.stdout.fnmatch_lines(["*decode_ttft*FAIL*"])
    assert slowed.ret == pytest.ExitCode.TESTS_FAILED
