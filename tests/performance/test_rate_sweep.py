"""The rate sweep judges each step on its own: the client kept the offered rate, every
request succeeded, TTFT held the SLO. A server that cannot hold the first step is a measured
regression (saturation below the first step), a client that could not send is a broken
precondition. Steps are recorded request by request, run through the production sweep loop
with the HTTP step replaced by constructed records."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from pytest_rocm_llm.config.checks import Check
from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.performance import workloads
from pytest_rocm_llm.performance.metrics import serving_metrics
from pytest_rocm_llm.performance.workloads import WorkloadResult, run_rate_sweep, run_workload
from pytest_rocm_llm.verdicts.checks import FloorMissed, PreconditionNotMet, preconditions
from tests.performance.test_metrics import rec
from tests.verdicts.test_checks import judged  # the production judge, on its demo suite

SWEEP = Workload(name="sat", kind="rate_sweep", profile=None, api="generate", input_tokens=100,
                 output_tokens=11, requests=10, rates=(2.0, 2.4, 2.8), ttft_slo_s=2.22,
                 cache_hit=0.6)
SATURATION = Check(name="saturation_rate", workload="sat", metric="saturation_rate", min=2.4,
                   max=None, source="published 2026-07", baseline="none")


def step(rate: float, *, ttft: float = 0.5, sent_at: float | None = None, failed: int = 0,
         cached: int = 60, out: int = 11) -> list:
    """Ten records of one step: sent on an exact schedule at ``sent_at`` req/s (the offered
    rate unless the client fell behind), the first ``failed`` of them HTTP 500s."""
    every = 1.0 / (sent_at or rate)
    recs = [rec(i, ttft, ttft + 1.0, 11, send=(i + 1) * every, cached=cached, ok=i >= failed)
            for i in range(10)]
    for r in recs:
        if r.ok:
            r.completion_tokens = out
    return recs


def sweep(by_rate: dict[float, list], w: Workload = SWEEP) -> tuple[WorkloadResult, list[float]]:
    """Run the production sweep loop with each step's records taken from ``by_rate``."""
    offered: list[float] = []

    async def fake_step(base_url, model, vocab, step_w, progress, headers, rate):
        offered.append(rate)
        recs = by_rate[rate]
        return WorkloadResult(step_w, recs, serving_metrics(recs, 10 / rate + 2.0))

    result = asyncio.run(run_rate_sweep("http://x", "m", None, w, lambda _m: None,
                                        run_step=fake_step))
    return result, offered


def test_every_step_holding_saturates_at_the_last_rate(tmp_path) -> None:
    result, offered = sweep({r: step(r) for r in SWEEP.rates})
    assert offered == [2.0, 2.4, 2.8]
    assert result.metrics["saturation_rate"] == 2.8 and preconditions(result) == []
    assert [s["status"] for s in result.steps] == ["held", "held", "held"]
    assert judged(SATURATION, result, tmp_path) == 2.8


def test_a_node_that_cannot_hold_the_first_step_is_a_regression_not_a_precondition(
        tmp_path) -> None:
    result, offered = sweep({2.0: step(2.0, ttft=5.0)})
    assert offered == [2.0]  # the sweep stops at the first broken step
    assert preconditions(result) == []
    assert result.metrics["saturation_rate"] == 0.0
    assert result.steps[0]["status"] == "broken"
    assert result.steps[0]["slo_breaches"] == ["TTFT max 5.00 s is over the SLO 2.22 s"]
    with pytest.raises(FloorMissed, match=r"saturation_rate = 0 req/s, floor >= 2.4 req/s"):
        judged(SATURATION, result, tmp_path)


def test_failed_requests_at_a_step_break_its_slo(tmp_path) -> None:
    result, _ = sweep({2.0: step(2.0), 2.4: step(2.4, failed=2)})
    assert preconditions(result) == []
    assert result.metrics["saturation_rate"] == 2.0
    assert [s["status"] for s in result.steps] == ["held", "broken"]
    assert result.steps[1]["slo_breaches"] == ["2/10 requests failed (first: request 0: "
                                               "HTTP 500)"]
    # the sweep's metrics are those of the last step that held
    assert result.metrics["success_ratio"] == 1.0
    with pytest.raises(FloorMissed):
        judged(SATURATION, result, tmp_path)


def test_a_step_the_client_could_not_send_is_a_precondition(tmp_path) -> None:
    # The 2.4 req/s step went out at 2.0 req/s: the load generator fell behind, so that
    # step's "held" says nothing about 2.4 req/s.
    result, offered = sweep({2.0: step(2.0), 2.4: step(2.4, sent_at=2.0)})
    assert offered == [2.0, 2.4]
    assert result.steps[1]["status"] == "invalid"
    assert result.metrics["saturation_rate"] is None
    problems = preconditions(result)
    assert len(problems) == 1
    assert problems[0].startswith("step 2.4 req/s: the client sent at 2.000 req/s, not within "
                                  "5% of the offered 2.4 req/s")
    with pytest.raises(PreconditionNotMet, match="step 2.4 req/s: the client sent at"):
        judged(SATURATION, result, tmp_path)


def test_a_client_shortfall_at_the_first_step_is_not_a_regression(tmp_path) -> None:
    result, _ = sweep({2.0: step(2.0, ttft=5.0, sent_at=1.5)})
    assert result.steps[0]["status"] == "invalid"
    with pytest.raises(PreconditionNotMet, match="step 2 req/s: the client sent at 1.500"):
        judged(SATURATION, result, tmp_path)


@pytest.mark.parametrize(("kw", "expected"), [
    ({"cached": 20}, "step 2.4 req/s: achieved prefix-cache hit ratio 20.0% is not within 5 "
                     "points of the target 60%"),
    ({"out": 7}, "step 2.4 req/s: 10 outputs not at the forced length 11 (e.g. 7 tokens)"),
])
def test_a_held_step_that_did_not_run_as_declared_is_a_precondition(kw, expected) -> None:
    result, _ = sweep({2.0: step(2.0), 2.4: step(2.4, **kw)})
    assert preconditions(result) == [expected]
    assert result.steps[1]["status"] == "invalid"


def test_a_step_whose_every_request_failed_is_broken_not_a_missing_cache_report() -> None:
    result, _ = sweep({2.0: step(2.0, failed=10)})
    assert preconditions(result) == []
    assert result.metrics["saturation_rate"] == 0.0
    assert result.steps[0]["slo_breaches"][0].startswith("10/10 requests failed")


def test_each_trial_of_a_sweep_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    results = iter([{2.0: step(2.0), 2.4: step(2.4, sent_at=2.0)},
                    {r: step(r) for r in SWEEP.rates}])

    async def runner(base_url, model, vocab, w, progress, headers):
        by_rate = next(results)

        async def fake_step(base_url, model, vocab, step_w, progress, headers, rate):
            return WorkloadResult(step_w, by_rate[rate],
                                  serving_metrics(by_rate[rate], 10 / rate + 2.0))

        return await run_rate_sweep(base_url, model, vocab, w, progress, headers, fake_step)

    monkeypatch.setattr(workloads, "run_rate_sweep", runner)  # what the kind names
    result = run_workload("http://x", "m", None, replace(SWEEP, trials=2), lambda _m: None,
                          poll_s=0.01)
    problems = preconditions(result)
    assert len(problems) == 1 and problems[0].startswith("trial 1: step 2.4 req/s: the client")
