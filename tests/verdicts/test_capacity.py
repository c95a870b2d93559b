"""The capacity gate (glm52's 2626 tok/s/node): the highest steady-state output tok/s among
sweep steps that held the SLO, judged through the production sweep loop and judge. Steps are
recorded requests on the production Poisson schedule (a 1/10 scale of glm52: 100-token
outputs, floor 262.6 tok/s), the HTTP step replaced by them."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

import pytest

from pytest_rocm_llm.config.suite import load_suite, parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.performance.metrics import STEADY_WINDOW, serving_metrics
from pytest_rocm_llm.performance.workloads import WorkloadResult, run_rate_sweep
from pytest_rocm_llm.serving.server import LLMServer
from pytest_rocm_llm.verdicts.baselines import BaselineCache
from pytest_rocm_llm.verdicts.checks import FloorMissed, PreconditionNotMet
from pytest_rocm_llm.verdicts.figures import figure_notes
from pytest_rocm_llm.verdicts.judge import judge_workload
from tests.conftest import ROOT, SMOKE_MODEL
from tests.performance.test_steady_state import served

SUITE = f"""
[suite]
name = "demo"
{SMOKE_MODEL}
[profiles.default]
[workloads.sat]
kind = "rate_sweep"
input_tokens = 100
output_tokens = 100
cache_hit = 0.6
rates = [2.0, 2.4, 2.8]
ttft_slo_s = 2.22
requests = 300
[workloads.agg]
kind = "fixed_rate"
input_tokens = 100
output_tokens = 100
cache_hit = 0.6
request_rate = 2.4
requests = 300
[checks.capacity]
workload = "sat"
metric = "capacity_output_tok_s"
min = 262.6
baseline = "none"
source = "published 2626 tok/s/node, at 1/10 scale"
[checks.keeps_up]
workload = "agg"
metric = "output_tok_s"
min = 216
baseline = "none"
source = "offered 2.4 req/s x 100 tokens less 10%"
"""


def parse(text: str = SUITE):
    return parse_suite(Path("suites/demo/suite.toml"), tomllib.loads(text))


def held(rate: float, **kw) -> list:
    return served(rate, 300, 100, seed=int(rate * 10), chunked=False, **kw)


def broken(rate: float) -> list:
    recs = held(rate, ttft=5.0)  # over the 2.22 s SLO, and faster tokens than any held step
    for r in recs:
        r.e2e_s = 5.0 + 99 / 8.0
    return recs


def sweep(by_rate: dict[float, list]) -> WorkloadResult:
    async def step(base_url, model, vocab, step_w, progress, headers, rate):
        recs = by_rate[rate]
        return WorkloadResult(step_w, recs, serving_metrics(
            recs, max(r.send_s + (r.e2e_s or 0) for r in recs)))

    return asyncio.run(run_rate_sweep("http://x", "m", None, parse().workloads["sat"],
                                      lambda _m: None, run_step=step))


def judge(result: WorkloadResult, tmp_path: Path, check: str = "capacity"):
    s = parse()
    server = LLMServer("demo", "default", "http://127.0.0.1:1", "sglang", "m", "/m", (), {},
                       "0.5.23")
    return judge_workload(s.checks[check], result, s, TARGETS["cpu"], server,
                          BaselineCache(tmp_path), "check", {"kind": "measured"}, "id", {})


def test_a_build_saturating_at_2_4_is_told_its_capacity_in_numbers(tmp_path: Path) -> None:
    result = sweep({2.0: held(2.0), 2.4: held(2.4), 2.8: broken(2.8)})
    m = result.metrics
    assert m["saturation_rate"] == 2.4 and m["capacity_rate"] == 2.4
    cap = m["capacity_output_tok_s"]
    assert cap == pytest.approx(240, rel=0.04)
    # the 2.8 step emitted more tokens per second, but broke the SLO: not capacity
    assert result.steps[2]["steady_output_tok_s"] > 262.6
    assert m["capacity_mean_output_tokens"] == 100.0
    out = judge(result, tmp_path)
    assert isinstance(out.error, FloorMissed)
    assert out.decision.verdict.measured == pytest.approx(cap)
    assert str(out.error).startswith(f"performance regression: capacity: capacity_output_tok_s"
                                     f" = {cap:.4g} tok/s, floor >= 262.6 tok/s")
    notes = figure_notes(parse().checks["capacity"], result)
    assert notes[0] == (f"capacity {cap:.4g} tok/s at the 2.4 req/s step, the best that held "
                        "the SLO (TTFT max <= 2.22 s, every request succeeded); that step "
                        "offered 2.4 req/s x 100 mean output tokens per completed request = "
                        "240 tok/s")
    assert notes[1].startswith(f"window: {STEADY_WINDOW} (")
    assert notes[2] == (f"{cap / 262.6:.3f} of the floor 262.6 tok/s, which at 100 tokens per "
                        "request needs 2.63 req/s held")
    assert notes[3] == "the next step, 2.8 req/s: TTFT max 5.00 s is over the SLO 2.22 s"


def test_a_build_holding_2_8_clears_the_floor(tmp_path: Path) -> None:
    result = sweep({r: held(r) for r in (2.0, 2.4, 2.8)})
    assert result.metrics["capacity_rate"] == 2.8
    assert result.metrics["capacity_output_tok_s"] == pytest.approx(280, rel=0.04)
    out = judge(result, tmp_path)
    assert out.error is None and out.decision.verdict.status == "pass"


def test_a_failed_request_at_a_step_keeps_it_out_of_capacity(tmp_path: Path) -> None:
    fails = held(2.8)
    fails[5].ok, fails[5].error = False, "HTTP 500"
    result = sweep({2.0: held(2.0), 2.4: held(2.4), 2.8: fails})
    assert result.metrics["capacity_rate"] == 2.4
    assert isinstance(judge(result, tmp_path).error, FloorMissed)


def test_a_node_that_cannot_hold_the_first_step_reads_zero_a_regression(tmp_path: Path) -> None:
    result = sweep({2.0: broken(2.0)})
    assert result.metrics["capacity_output_tok_s"] == 0.0
    out = judge(result, tmp_path)
    assert isinstance(out.error, FloorMissed)
    assert "capacity_output_tok_s = 0 tok/s, floor >= 262.6 tok/s" in str(out.error)
    assert figure_notes(parse().checks["capacity"], result) == (
        "no step held the SLO (TTFT max <= 2.22 s, every request succeeded): the first, 2 "
        "req/s, broke it: TTFT max 5.00 s is over the SLO 2.22 s",)


def test_a_step_the_client_could_not_send_leaves_capacity_unknown(tmp_path: Path) -> None:
    late = held(2.4)
    for r in late:
        r.send_s *= 1.25  # sent at 1.92 req/s
    result = sweep({2.0: held(2.0), 2.4: late})
    assert result.metrics["capacity_output_tok_s"] is None
    out = judge(result, tmp_path)
    assert isinstance(out.error, PreconditionNotMet)
    assert "step 2.4 req/s: the client sent at 1.920 req/s" in str(out.error)


def test_a_held_step_too_short_for_a_steady_state_leaves_capacity_unknown(
        tmp_path: Path) -> None:
    short = served(2.4, 20, 100, seed=3, chunked=False)  # 8 s of arrivals, 25 s lifetimes
    result = sweep({2.0: held(2.0), 2.4: short, 2.8: broken(2.8)})
    assert result.steps[1]["held"] and result.steps[1]["steady_output_tok_s"] is None
    assert result.metrics["capacity_output_tok_s"] is None
    out = judge(result, tmp_path)
    assert isinstance(out.error, PreconditionNotMet)
    assert "produced no capacity_output_tok_s" in str(out.error)
    (note,) = figure_notes(parse().checks["capacity"], result)
    assert note.startswith("step 2.4 req/s held the SLO but had no steady state to measure")


def test_every_step_records_its_steady_state_and_mean_output_tokens() -> None:
    result = sweep({2.0: held(2.0), 2.4: held(2.4), 2.8: broken(2.8)})
    for s in result.steps:
        assert s["mean_output_tokens"] == 100.0
        assert s["steady_window_s"] > 0 and s["steady_output_tok_s"] > 0


def test_keeping_up_at_2_4_shows_the_offered_arithmetic(tmp_path: Path) -> None:
    s = parse()
    recs = held(2.4)
    result = WorkloadResult(s.workloads["agg"], recs, serving_metrics(
        recs, max(r.send_s + (r.e2e_s or 0) for r in recs)))
    notes = figure_notes(s.checks["keeps_up"], result)
    assert notes[2] == "100 mean output tokens per completed request"
    assert notes[3].startswith("offered: 2.4 req/s x 100 tokens = 240 tok/s")
    assert notes[0].startswith("whole run: ") and "ramp-up and drain included" in notes[0]
    assert notes[1].startswith("steady state: ")


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("min = 262.6", "min = 290", "key 'checks.capacity.min': a capacity floor of 290 tok/s is "
     "out of reach of the sweep: its last step offers 2.8 req/s x 100 tokens = 280 tok/s; add "
     "a rate above 2.9 req/s to workloads.sat.rates"),
    ("min = 262.6", "min = 150", "key 'checks.capacity.min': a capacity floor of 150 tok/s is "
     "below the sweep's first step (2 req/s x 100 tokens = 200 tok/s)"),
    ('workload = "sat"', 'workload = "agg"', "key 'checks.capacity.metric': "
     "capacity_output_tok_s is measured by a rate_sweep workload; 'agg' is a fixed_rate"),
])
def test_a_capacity_floor_the_sweep_cannot_judge_is_a_usage_error(old, new, expected) -> None:
    text = SUITE.replace(old, new, 1)
    assert text != SUITE
    with pytest.raises(ConfigError) as info:
        parse(text)
    assert "suites/demo/suite.toml" in str(info.value) and expected in str(info.value)


def test_glm52_judges_the_2626_floor_on_a_sweep_past_2_63_req_s() -> None:
    s, t = load_suite(ROOT / "suites" / "glm52" / "suite.toml"), TARGETS["mi355x"]
    check = s.checks["aggregate_capacity"]
    assert (check.metric, check.min, check.unit) == ("capacity_output_tok_s", 2626, "tok/s")
    w = s.workload_for(check.workload, t)
    assert (w.kind, w.input_tokens, w.output_tokens, w.cache_hit, w.ttft_slo_s) == (
        "rate_sweep", 20000, 1000, 0.6, 2.22)
    assert w.rates[0] <= 2.4 and w.rates[-1] * w.output_tokens > 2626
    assert "2626" in check.source and "1094" in check.source
    keeps = s.checks["keeps_up_at_2_4_rps"]
    assert (keeps.metric, keeps.min) == ("output_tok_s", 2160)
    assert "aggregate_output_throughput" not in s.checks
    p50 = s.checks["aggregate_ttft_p50"]
    assert (p50.metric, p50.max, p50.workload) == ("ttft_p50_s", 0.62, "aggregate")


def test_glm52_plan_shows_the_capacity_check_with_its_source() -> None:
    from tests.report.test_plan import glm52_plan

    lines = glm52_plan().splitlines()
    i = lines.index("  aggregate_capacity: capacity_output_tok_s >= 2626 tok/s on workload "
                    "saturation")
    assert lines[i + 1].startswith("    method: best steady-state output tok/s")
    assert lines[i + 2].startswith("    source: published GLM 5.2 / MI355X aggregate: 2626 "
                                   "tok/s/node")
    assert any(ln.startswith("  aggregate_ttft_p50: ttft_p50_s <= 0.62 s") for ln in lines)
