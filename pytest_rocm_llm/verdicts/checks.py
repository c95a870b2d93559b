"""Checks declared in suite.toml, and their verdicts.

A floor is asserted only after the run's preconditions hold: every request succeeded, the
achieved request rate is within 5% of the target, the achieved prefix-cache hit ratio is
within 5 points of the target, and every prompt and output had its forced length. A broken
precondition fails as ``PreconditionNotMet`` naming what broke, never as a speed verdict.
A rate sweep's preconditions are those of each step; a step the server failed (requests
failed, TTFT over the SLO) is its measurement, not a broken precondition.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, ValidationInfo, model_validator

from pytest_rocm_llm.config.fields import check
from pytest_rocm_llm.config.toml import Table, TomlTable, override_of, problem, validate
from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.errors import VerdictFailure
from pytest_rocm_llm.performance.records import RequestRecord
from pytest_rocm_llm.verdicts.gate import (
    Gate,
    Measurement,
    between_runs,
    binomial_stderr,
    gate_kind_for,
    stderr_of_mean,
)

if TYPE_CHECKING:
    from pytest_rocm_llm.performance.workloads import WorkloadResult

BASELINE_GATES = ("floor", "ceiling", "band", "none")

RATE_TOLERANCE = 0.05  # relative
CACHE_TOLERANCE = 0.05  # absolute (5 points)

UNITS = {
    "output_speed_tok_s": "tok/s", "output_tok_s": "tok/s", "total_tok_s": "tok/s",
    "request_throughput": "req/s", "saturation_rate": "req/s", "ttft_p50_s": "s",
    "ttft_p99_s": "s", "ttft_max_s": "s", "tpot_p50_s": "s", "tpot_p99_s": "s",
    "itl_p99_s": "s", "e2e_p50_s": "s", "success_ratio": "", "cache_hit_ratio": "",
    "accept_length": "tok/step", "usd_per_mtok": "$/Mtok",
    "steady_output_tok_s": "tok/s", "capacity_output_tok_s": "tok/s",
    "mean_output_tokens": "tok",
}
# What a relative check (relative_to = ...) may compare: speeds, where higher is better on
# both sides, so a floor on their ratio reads as "at least this much faster".
SPEED_METRICS = ("output_speed_tok_s", "output_tok_s", "total_tok_s", "request_throughput")


class PreconditionNotMet(VerdictFailure):
    """The run did not do what the floor assumes; its numbers are not a verdict."""


class FloorMissed(VerdictFailure):
    """The measured value is on the wrong side of its floor or ceiling."""


@dataclass(frozen=True)
class Check:
    name: str
    workload: str | None  # a performance check reads a workload ...
    metric: str
    min: float | None
    max: float | None
    source: str
    description: str = ""
    # How the value is obtained, as the floor's source obtained it (dataset, prompts,
    # sampling, thinking mode, budget, scoring); "not published" where it is not known.
    method: str = ""
    # The baseline gate: floor/ceiling by direction unless set; "none" gates on floors only.
    baseline: str = ""
    baseline_alpha: float = 0.01
    baseline_tolerance: float = 0.0
    eval: str | None = None  # ... a correctness check reads an evaluation
    # Accuracy floors that respect sample size: the exact one-sided binomial critical value
    # around the reference score at this false-fail rate, minus the allowance.
    reference_score: float | None = None
    alpha: float = 0.01
    allowance: float = 0.0
    # A relative check's value is its metric on ``workload`` over the same metric on this
    # workload (e.g. speculative decoding over no speculation), so its floor is a ratio.
    relative_to: str | None = None

    @property
    def unit(self) -> str:
        from pytest_rocm_llm.config.evals import UNITS as EVAL_UNITS

        if self.relative_to is not None:
            return "x"
        return UNITS.get(self.metric, "") if self.workload else EVAL_UNITS.get(self.metric, "")

    @property
    def feature(self) -> str:
        return "performance" if self.workload else "correctness"

    @property
    def direction(self) -> str:
        return "higher" if self.min is not None or self.reference_score is not None \
            else "lower"

    @property
    def gate(self) -> Gate | None:
        kind = self.baseline or gate_kind_for(self.direction)  # type: ignore[arg-type]
        if kind == "none":
            return None
        return Gate(kind, self.baseline_alpha, self.baseline_tolerance)  # type: ignore[arg-type]


class CheckTable(TomlTable):
    """``[checks.<name>]`` as written in suite.toml. Validated with the suite's workloads and
    evaluations as context (``workloads``, ``evals``), which a check must name."""

    workload: str | None = None
    eval: str | None = None
    metric: str
    min: float | None = None
    max: float | None = None
    source: str = ""
    description: str = ""
    method: str = ""
    baseline: Annotated[str, check(lambda b: b == "" or b in BASELINE_GATES, lambda b: (
        f"{b!r} is not a gate ({', '.join(BASELINE_GATES)})"))] = ""
    baseline_alpha: float = Field(0.01, gt=0, le=0.5)
    baseline_tolerance: float = Field(0.0, ge=0.0, le=10.0)
    reference_score: float | None = Field(None, ge=0.0, le=1.0)
    alpha: float = Field(0.01, gt=0, le=0.5)
    allowance: float = Field(0.0, ge=0.0, le=1.0)
    relative_to: str | None = None

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> CheckTable:
        context = info.context or {}
        _references(self, context.get("workloads", {}), context.get("evals", {}))
        return self


def _references(c: CheckTable, workloads: Mapping[str, Workload],
                evals: Mapping[str, Any]) -> None:
    """What a check names must exist and be able to produce its metric and floor."""
    if (c.workload is None) == (c.eval is None):
        raise problem(None, "a check reads either a workload (workload = ...) or an "
                            "evaluation (eval = ...), one of them")
    if c.workload is not None and c.workload not in workloads:
        raise problem("workload", f"{c.workload!r} is not a workload "
                                  f"({', '.join(workloads) or 'none'})")
    if c.eval is not None and c.eval not in evals:
        raise problem("eval", f"{c.eval!r} is not an evaluation ({', '.join(evals) or 'none'})")
    if c.workload is not None and c.metric not in UNITS:
        raise problem("metric", f"{c.metric!r} is not a metric; metrics: {', '.join(UNITS)}")
    if c.eval is not None:
        from pytest_rocm_llm.config.evals import metric_known, metrics_of

        kind = evals[c.eval].kind
        if not metric_known(kind, c.metric):
            raise problem("metric", f"{c.metric!r} is not a metric of a {kind} evaluation; "
                                    f"metrics: {metrics_of(kind)}")
    if c.relative_to is not None:
        _relative(c.workload, c.relative_to, workloads, c.metric)
    if c.reference_score is not None and c.eval is None:
        raise problem("reference_score", "a binomial floor needs an evaluation (eval = ...)")
    if c.min is None and c.max is None and c.reference_score is None:
        raise problem(None, "a check needs min (a floor), max (a ceiling) or reference_score "
                            "(a binomial floor around a published score)")
    if not c.source:
        raise problem("source", "say where the number comes from (a publication, a "
                                "measurement)")
    if c.workload is not None and c.metric == "saturation_rate":
        _saturation_floor(c.workload, workloads[c.workload], c.min)
    if c.workload is not None and c.metric == "capacity_output_tok_s":
        _capacity_floor(c.workload, workloads[c.workload], c.min)


def parse_check(name: str, t: Table, workloads: Mapping[str, Workload],
                base: Check | None = None, evals: Mapping[str, Any] | None = None) -> Check:
    """A check from its table; with ``base``, a per-target override of some fields."""
    table = validate(CheckTable, t, override_of(CheckTable, base, t.data),
                     context={"workloads": workloads, "evals": evals or {}})
    return Check(name=name, **table.model_dump())


def _relative(name: str | None, ref: str, workloads: Mapping[str, Workload],
              metric: str) -> None:
    if name is None:
        raise problem("relative_to", "a relative check compares two workloads' speeds; an "
                                     "evaluation has none (read a workload with workload = ...)")
    if ref not in workloads:
        raise problem("relative_to", f"{ref!r} is not a workload ({', '.join(workloads)})")
    if ref == name:
        raise problem("relative_to", f"{name!r} relative to itself is 1 by definition; name the "
                                     "workload it must beat (e.g. the same sizes without "
                                     "speculation)")
    # Runs of different kinds measure different things (one stream against a loaded
    # server), so their ratio would say nothing about the feature that differs.
    mine, theirs = workloads[name].kind, workloads[ref].kind
    if mine != theirs:
        raise problem("relative_to", f"{ref!r} is a {theirs} workload and {name!r} a {mine} "
                                     f"one; a ratio compares runs of the same kind: name a "
                                     f"{mine} workload")
    if metric not in SPEED_METRICS:
        raise problem("metric", f"{metric!r} is not a speed; a relative check (relative_to = "
                                f"...) compares speeds: {', '.join(SPEED_METRICS)}")


def _saturation_floor(name: str, w: Workload, floor: float | None) -> None:
    if w.kind != "rate_sweep":
        raise problem("metric", f"saturation_rate is measured by a rate_sweep workload; "
                                f"{name!r} is a {w.kind}")
    # A node that cannot hold the first step reads 0 (below every offered rate): against a
    # floor under that step it may still have held the floor, so the verdict would be a guess.
    if floor is not None and w.rates and floor < w.rates[0]:
        raise problem("min", f"a saturation floor of {floor:g} req/s is below the sweep's first "
                             f"rate {w.rates[0]:g} req/s, so a node failing that step cannot be "
                             f"judged against it; start workloads.{name}.rates at or below the "
                             "floor")


def _capacity_floor(name: str, w: Workload, floor: float | None) -> None:
    if w.kind != "rate_sweep":
        raise problem("metric", f"capacity_output_tok_s is the best step of a rate_sweep "
                                f"workload; {name!r} is a {w.kind}")
    if floor is None or not w.rates:
        return
    # A step that keeps up offers rate x output tokens and shows about that in steady state
    # (never more): a sweep whose last step offers no more than the floor cannot pass it,
    # whatever the node sustains.
    top, low = w.rates[-1] * w.output_tokens, w.rates[0] * w.output_tokens
    if top <= floor:
        raise problem("min", f"a capacity floor of {floor:g} tok/s is out of reach of the sweep: "
                             f"its last step offers {w.rates[-1]:g} req/s x {w.output_tokens} "
                             f"tokens = {top:g} tok/s; add a rate above "
                             f"{floor / w.output_tokens:.3g} req/s to workloads.{name}.rates")
    # A node that cannot hold the first step reads 0; were that step above the floor, the
    # node might still sustain the floor at a lower rate, so 0 would not be a verdict.
    if low > floor:
        raise problem("min", f"a capacity floor of {floor:g} tok/s is below the sweep's first "
                             f"step ({w.rates[0]:g} req/s x {w.output_tokens} tokens = "
                             f"{low:g} tok/s), so a node failing that step cannot be judged "
                             f"against it; start workloads.{name}.rates at or below "
                             f"{floor / w.output_tokens:.3g} req/s")


def _failed(recs: Sequence[RequestRecord]) -> str | None:
    failed = [r for r in recs if not r.ok]
    if not failed:
        return None
    return (f"{len(failed)}/{len(recs)} requests failed "
            f"(first: request {failed[0].index}: {failed[0].error})")


def _run_problems(w: Workload, m: Mapping[str, float | None], recs: Sequence[RequestRecord],
                  rate: float | None) -> list[str]:
    """What the client or the workload's shape got wrong (never a request the server failed):
    outputs and prompts off their forced length, the offered rate not kept, the cache-hit
    target not shown."""
    problems = []
    ok = [r for r in recs if r.ok]
    short = [r for r in ok if r.completion_tokens != r.expected_output_tokens]
    if short:
        problems.append(f"{len(short)} outputs not at the forced length {w.output_tokens} "
                        f"(e.g. {short[0].completion_tokens} tokens)")
    bad_prompts = [r for r in ok if r.prompt_tokens != r.expected_prompt_tokens]
    if bad_prompts:
        problems.append(f"{len(bad_prompts)} prompts not at {w.input_tokens} tokens "
                        f"(server counted {bad_prompts[0].prompt_tokens})")
    if rate:
        achieved = m.get("achieved_request_rate")
        if achieved is None or abs(achieved - rate) > RATE_TOLERANCE * rate:
            problems.append(f"achieved request rate {achieved or 0:.3f} req/s is not within "
                            f"{RATE_TOLERANCE:.0%} of the target {rate:g} req/s")
    # With no successful request there is no cache report to read: that run is the
    # server's failure, named as such, not a missing --enable-cache-report.
    if w.kind in ("fixed_rate", "rate_sweep") and w.cache_hit > 0 and ok:
        hit = m.get("cache_hit_ratio")
        if hit is None:
            problems.append("the server reported no cached_tokens (sglang: "
                            "--enable-cache-report), so the cache-hit target cannot be shown")
        elif abs(hit - w.cache_hit) > CACHE_TOLERANCE:
            problems.append(f"achieved prefix-cache hit ratio {hit:.1%} is not within "
                            f"{CACHE_TOLERANCE * 100:.0f} points of the target {w.cache_hit:.0%}")
    return problems


def preconditions(result: WorkloadResult) -> list[str]:
    """What is wrong with the run, in words; empty when floors may be asserted."""
    w, m, recs = result.workload, result.metrics, result.records
    if w.kind == "rate_sweep":
        # Each step was validated as it ran (judge_step); a step the server could not hold
        # is the measurement, not a broken precondition, so the records are not re-read.
        return list(result.problems) if result.steps else ["the workload produced no requests"]
    if not recs:
        return ["the workload produced no requests"]
    failed = _failed(recs)
    rate = w.request_rate if w.kind == "fixed_rate" else None
    return ([failed] if failed else []) + _run_problems(w, m, recs, rate)


def judge_step(w: Workload, rate: float, m: Mapping[str, float | None],
               recs: Sequence[RequestRecord]) -> dict[str, Any]:
    """One step of a rate sweep, judged on its own: ``invalid`` when it did not run as
    declared (the step says nothing about ``rate``), else ``held`` or ``broken`` by the SLO
    (every request succeeded, TTFT max within ``ttft_slo_s``)."""
    problems = _run_problems(w, m, recs, None) if recs else ["the step produced no requests"]
    achieved = m.get("achieved_request_rate")
    # send_s is stamped before the connection opens, so a late send is the load generator
    # falling behind its schedule, never the server being slow.
    if recs and (achieved is None or achieved < (1 - RATE_TOLERANCE) * rate):
        problems.insert(0, f"the client sent at {achieved or 0:.3f} req/s, not within "
                           f"{RATE_TOLERANCE:.0%} of the offered {rate:g} req/s (the load "
                           "generator fell behind its schedule)")
    breaches = []
    failed = _failed(recs)
    if failed:
        breaches.append(failed)
    slo, ttft = w.ttft_slo_s or 0.0, m.get("ttft_max_s")
    if ttft is not None and ttft > slo:
        breaches.append(f"TTFT max {ttft:.2f} s is over the SLO {slo:g} s")
    status = "invalid" if problems else "broken" if breaches else "held"
    return {"rate": rate, "status": status, "held": status == "held", "problems": problems,
            "slo_breaches": breaches, **m}


# Metrics that are a median or mean of per-request values: their spread comes from the run's
# own requests. Others (maxima, percentiles, rates over a window) get one from trials only.
_PER_REQUEST = {
    "output_speed_tok_s": ("output_speed_tok_s", 1.2533),  # stderr of a median ~ 1.25x mean's
    "tpot_p50_s": ("tpot_s", 1.2533),
}


def measure(check: Check, result: WorkloadResult) -> Measurement:
    """The check's metric with its noise: across trials when the workload ran several,
    else from the per-request values the metric summarizes."""
    value = result.metrics[check.metric]
    assert value is not None
    trials = [float(v) for t in result.trials if (v := t.get(check.metric)) is not None]
    if len(trials) >= 2:  # the spread between runs, the only one a baseline gate may use
        return between_runs(trials, len(result.records))
    ok = [r for r in result.records if r.ok]
    if check.metric == "success_ratio":
        return Measurement(float(value), len(result.records),
                           binomial_stderr(float(value), len(result.records)))
    if check.metric in _PER_REQUEST:
        attr, factor = _PER_REQUEST[check.metric]
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
