"""Each workload kind at tiny size against the real CPU sglang, through a pytester suite run:
metrics come out, floors pass or fail with the shortfall, and a broken precondition (the
prefix cache turned off, so the cache-hit target cannot be met) fails as its own named
failure rather than as a throughput verdict.

The same run holds the server lifecycle's one-server-per-profile claim (it was a run of its own
in tests/serving/test_engine_lifecycle.py; a run costs its server starts, issue 20): four
workloads on the default profile are served by one launch, the nocache profile gets its own
on another port, the first is stopped before the second loads (an idle server on the CPU
reference takes cores from the one measured), and neither leaves a process behind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import suite_head
from tests.serving.test_engine_lifecycle import assert_groups_gone, launched

# Measures speed (or a sending rate): nothing else may run beside it (tests/conftest.py).
pytestmark = [pytest.mark.engine, pytest.mark.alone]

SUITE = suite_head("perf", {"default": {}, "nocache": {"disable-radix-cache": True}}) + """
[workloads.one]
kind = "single_stream"
input_tokens = 64
output_tokens = 8
requests = 2
warmup = 1

[workloads.rate]
kind = "fixed_rate"
input_tokens = 96
output_tokens = 6
requests = 4
request_rate = 0.5
cache_hit = 0.5

[workloads.rate_nocache]
kind = "fixed_rate"
profile = "nocache"
input_tokens = 96
output_tokens = 6
requests = 4
request_rate = 0.5
cache_hit = 0.5

[workloads.sweep]
kind = "rate_sweep"
api = "completions"
input_tokens = 64
output_tokens = 4
requests = 2
rates = [0.5, 1.0]
ttft_slo_s = 60
warmup = 0

[checks.speed]
workload = "one"
metric = "output_speed_tok_s"
min = 0.5
source = "test floor"
baseline = "none"

[checks.impossible_speed]
workload = "one"
metric = "output_speed_tok_s"
min = 1000000
source = "an impossible floor"
baseline = "none"

[checks.rate_ttft]
workload = "rate"
metric = "ttft_max_s"
max = 120
source = "test ceiling"
baseline = "none"

[checks.nocache_tput]
workload = "rate_nocache"
metric = "output_tok_s"
min = 0.01
source = "test floor"
baseline = "none"

[checks.saturation]
workload = "sweep"
metric = "saturation_rate"
min = 0.5
source = "test floor"
baseline = "none"
"""

TESTS = """
def test_performance(llm_check, llm_judge):
    llm_judge(llm_check)
"""


def test_workloads_checks_and_preconditions(pytester: pytest.Pytester, suite_dir, engine_env,
                                            monkeypatch) -> None:
    suite_dir(SUITE, {"test_perf.py": TESTS}, name="perf")
    # A signature that every CPU server log shows, so a failing check must carry the section.
    sigs = pytester.path / "sigs.toml"
    sigs.write_text('[[signature]]\nid = "batch-lines"\ntitle = "scheduler batch lines"\n'
                    'pattern = "Prefill batch"\nseverity = "warning"\nadvice = "none"\n')
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", "-s", "-v",
                                           "--llm-signatures", str(sigs), timeout=1500)
    out = result.stdout.str()
    outcomes = {
        name: "PASSED" if f"test_performance[{name}] PASSED" in out else "other"
        for name in ("speed", "rate_ttft", "saturation")
    }
    assert outcomes == {"speed": "PASSED", "rate_ttft": "PASSED", "saturation": "PASSED"}, out
    result.assert_outcomes(passed=3, failed=2)
    # the impossible floor fails as a floor, with the shortfall
    assert "FloorMissed: performance regression: impossible_speed: output_speed_tok_s = " in out
    assert "floor >= 1e+06 tok/s (an impossible floor): short by 100.0%" in out
    # a missed floor is a verdict the test reached, never "not judged"
    assert "NOT JUDGED" not in out
    # ... and carries the known signatures of its server's log
    assert "rocm-llm: known failure signatures in the server log" in out
    assert "[warning] scheduler batch lines (batch-lines), log line" in out
    # with the radix cache off the cache-hit target is unreachable: a named precondition
    assert ("PreconditionNotMet: precondition not met: nocache_tput: rate_nocache did not do "
            "what the check assumes") in out
    assert "achieved prefix-cache hit ratio 0.0% is not within 5 points of the target 50%" in out
    # each workload ran once, its results were written
    runs = list(Path(pytester.path).rglob("llm-workloads/perf-*.json"))
    assert sorted(p.stem for p in runs) == ["perf-one", "perf-rate", "perf-rate_nocache",
                                            "perf-sweep"]
    rate = json.loads(next(p for p in runs if p.stem == "perf-rate").read_text())["metrics"]
    assert rate["success_ratio"] == 1.0 and rate["requests"] == 4
    assert abs(rate["cache_hit_ratio"] - 0.5) <= 0.05
    assert abs(rate["achieved_request_rate"] - 0.5) <= 0.025
    sweep = json.loads(next(p for p in runs if p.stem == "perf-sweep").read_text())
    assert [s["rate"] for s in sweep["steps"]] == [0.5, 1.0]
    assert out.count("perf/one: single_stream") == 1
    # one server per profile, reused by every workload of its profile, then reaped
    servers = launched(out)
    assert sorted(name for name, _, _ in servers) == ["perf/default", "perf/nocache"], out
    assert len({port for _, port, _ in servers}) == 2, f"two profiles shared a port: {servers}"
    # (live progress lines only: a failing check's report repeats the captured log)
    assert len(re.findall(r"^\[rocm-llm\] \S+: ready in", out, re.M)) == 2, out
    assert "perf/default: stopped" in out and "perf/nocache: stopped" in out, out
    assert out.index("perf/default: stopped") < out.index("perf/nocache: loading"), out
    assert_groups_gone([pid for _, _, pid in servers])
