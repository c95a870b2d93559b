"""How a declared check (config/checks.py) is measured and judged.

A floor is asserted only after the run's preconditions hold: every request succeeded, the
achieved request rate is within 5% of the target, the achieved prefix-cache hit ratio is
within 5 points of the target, and every prompt and output had its forced length
(performance/preconditions.py). A broken precondition fails as ``PreconditionNotMet`` naming
what broke, never as a speed verdict. A rate sweep's preconditions are those of each step; a
step the server failed (requests failed, TTFT over the SLO) is its measurement, not a broken
precondition.
"""

from __future__ import annotations

import math

from pytest_rocm_llm.config import metric_facts
from pytest_rocm_llm.config.checks import Check
from pytest_rocm_llm.errors import VerdictFailure
from pytest_rocm_llm.performance.preconditions import failed_requests, run_problems
from pytest_rocm_llm.performance.workloads import WorkloadResult
from pytest_rocm_llm.verdicts.gate import Measurement, between_runs, binomial_stderr, stderr_of_mean


class PreconditionNotMet(VerdictFailure):
    """The run did not do what the floor assumes; its numbers are not a verdict."""


class FloorMissed(VerdictFailure):
    """The measured value is on the wrong side of its floor or ceiling."""


def preconditions(result: WorkloadResult) -> list[str]:
    """What is wrong with the run, in words; empty when floors may be asserted."""
    w, m, recs = result.workload, result.metrics, result.records
    if w.arrivals == "at_each_rate":
        # Each step was validated as it ran (judge_step); a step the server could not hold
        # is the measurement, not a broken precondition, so the records are not re-read.
        return list(result.problems) if result.steps else ["the workload produced no requests"]
    if not recs:
        return ["the workload produced no requests"]
    failed = failed_requests(recs)
    rate = w.request_rate if w.arrivals == "at_a_rate" else None
    return ([failed] if failed else []) + run_problems(w, m, recs, rate)


def measure(check: Check, result: WorkloadResult) -> Measurement:
    """The check's metric with its noise: across trials when the workload ran several,
    else from the per-request values the metric summarizes."""
    value = result.metrics[check.metric]
    assert value is not None
    trials = [float(v) for t in result.trials if (v := t.get(check.metric)) is not None]
    if len(trials) >= 2:  # the spread between runs, the only one a baseline gate may use
        return between_runs(trials, len(result.records))
    ok = [r for r in result.records if r.ok]
    facts = metric_facts.facts(check.metric)
    if facts.noise == "binomial":  # a share of the run's requests
        return Measurement(float(value), len(result.records),
                           binomial_stderr(float(value), len(result.records)))
    if facts.per_request is not None:  # a median or mean of one value per request
        attr, factor = facts.per_request
        values = [v for r in ok if (v := getattr(r, attr)) is not None]
        se = stderr_of_mean(values)
        return Measurement(float(value), max(len(values), 1),
                           se * factor if se is not None else None)
    return Measurement(float(value), max(len(ok), 1), None)


def measure_ratio(check: Check, result: WorkloadResult, reference: WorkloadResult
                  ) -> Measurement:
    """A relative check's value: the metric on its workload over the metric on the reference
    workload, with the delta-method standard error of a ratio of two independent runs
    (relative errors add in quadrature); None when either side's noise is unknown."""
    a, b = measure(check, result), measure(check, reference)
    value = a.value / b.value
    spread = None
    if a.spread is not None and b.spread is not None and a.value:
        spread = abs(value) * math.hypot(a.spread / a.value, b.spread / b.value)
    return Measurement(value, min(a.n, b.n), spread)
