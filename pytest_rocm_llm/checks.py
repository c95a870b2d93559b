"""Checks declared in suite.toml, and their verdicts.

A floor is asserted only after the run's preconditions hold: every request succeeded, the
achieved request rate is within 5% of the target, the achieved prefix-cache hit ratio is
within 5 points of the target, and every prompt and output had its forced length. A broken
precondition fails as ``PreconditionNotMet`` naming what broke, never as a speed verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .tomlschema import REQUIRED, Table
from .workload_config import Workload

if TYPE_CHECKING:
    from .workloads import WorkloadResult

RATE_TOLERANCE = 0.05  # relative
CACHE_TOLERANCE = 0.05  # absolute (5 points)

UNITS = {
    "output_speed_tok_s": "tok/s", "output_tok_s": "tok/s", "total_tok_s": "tok/s",
    "request_throughput": "req/s", "saturation_rate": "req/s", "ttft_p50_s": "s",
    "ttft_p99_s": "s", "ttft_max_s": "s", "tpot_p50_s": "s", "tpot_p99_s": "s",
    "itl_p99_s": "s", "e2e_p50_s": "s", "success_ratio": "", "cache_hit_ratio": "",
    "accept_length": "tok/step", "usd_per_mtok": "$/Mtok",
}


class PreconditionNotMet(AssertionError):
    """The run did not do what the floor assumes; its numbers are not a verdict."""


class FloorMissed(AssertionError):
    """The measured value is on the wrong side of its floor or ceiling."""


@dataclass(frozen=True)
class Check:
    name: str
    workload: str
    metric: str
    min: float | None
    max: float | None
    source: str
    description: str = ""

    @property
    def unit(self) -> str:
        return UNITS.get(self.metric, "")


def parse_check(name: str, t: Table, workloads: dict[str, Workload],
                base: Check | None = None) -> Check:
    def d(key: str, fallback: object = REQUIRED) -> object:
        return getattr(base, key) if base is not None else fallback

    workload = t.string("workload", d("workload"))
    if workload not in workloads:
        t.fail("workload", f"{workload!r} is not a workload ({', '.join(workloads) or 'none'})")
    metric = t.string("metric", d("metric"))
    if metric not in UNITS:
        t.fail("metric", f"{metric!r} is not a metric; metrics: {', '.join(UNITS)}")
    c = Check(
        name=name, workload=workload, metric=metric,
        min=t.number("min", d("min", None)), max=t.number("max", d("max", None)),
        source=t.string("source", d("source", "")),
        description=t.string("description", d("description", "")),
    )
    if c.min is None and c.max is None:
        t.fail(None, "a check needs min (a floor) or max (a ceiling)")
    if not c.source:
        t.fail("source", "say where the number comes from (a publication, a measurement)")
    t.done()
    return c


def preconditions(result: WorkloadResult) -> list[str]:
    """What is wrong with the run, in words; empty when floors may be asserted."""
    w, m, recs = result.workload, result.metrics, result.records
    problems = []
    if not recs:
        return ["the workload produced no requests"]
    failed = [r for r in recs if not r.ok]
    if failed:
        first = failed[0]
        problems.append(f"{len(failed)}/{len(recs)} requests failed "
                        f"(first: request {first.index}: {first.error})")
    ok = [r for r in recs if r.ok]
    short = [r for r in ok if r.completion_tokens != r.expected_output_tokens]
    if short:
        problems.append(f"{len(short)} outputs not at the forced length {w.output_tokens} "
                        f"(e.g. {short[0].completion_tokens} tokens)")
    bad_prompts = [r for r in ok if r.prompt_tokens != r.expected_prompt_tokens]
    if bad_prompts:
        problems.append(f"{len(bad_prompts)} prompts not at {w.input_tokens} tokens "
                        f"(server counted {bad_prompts[0].prompt_tokens})")
    if w.kind == "fixed_rate" and w.request_rate:
        achieved = m.get("achieved_request_rate")
        if achieved is None or abs(achieved - w.request_rate) > RATE_TOLERANCE * w.request_rate:
            problems.append(f"achieved request rate {achieved or 0:.3f} req/s is not within "
                            f"{RATE_TOLERANCE:.0%} of the target {w.request_rate:g} req/s")
    if w.kind in ("fixed_rate", "rate_sweep") and w.cache_hit > 0:
        hit = m.get("cache_hit_ratio")
        if hit is None:
            problems.append("the server reported no cached_tokens (sglang: "
                            "--enable-cache-report), so the cache-hit target cannot be shown")
        elif abs(hit - w.cache_hit) > CACHE_TOLERANCE:
            problems.append(f"achieved prefix-cache hit ratio {hit:.1%} is not within "
                            f"{CACHE_TOLERANCE * 100:.0f} points of the target {w.cache_hit:.0%}")
    return problems


def verify(check: Check, result: WorkloadResult) -> float:
    """Assert the check on the run; returns the measured value."""
    __tracebackhide__ = True  # the message says it all; show the test's line, not ours
    problems = preconditions(result)
    if problems:
        raise PreconditionNotMet(
            f"{check.name}: precondition not met for workload {check.workload}, so "
            f"{check.metric} is not judged:\n  - " + "\n  - ".join(problems))
    value = result.metrics.get(check.metric)
    if value is None:
        raise PreconditionNotMet(f"{check.name}: the run produced no {check.metric}")
    unit = f" {check.unit}" if check.unit else ""
    if check.min is not None and value < check.min:
        short = (check.min - value) / check.min * 100 if check.min else float("inf")
        raise FloorMissed(f"{check.name}: {check.metric} = {value:.4g}{unit}, floor "
                          f">= {check.min:g}{unit} ({check.source}): short by {short:.1f}%")
    if check.max is not None and value > check.max:
        over = (value - check.max) / check.max * 100 if check.max else float("inf")
        raise FloorMissed(f"{check.name}: {check.metric} = {value:.4g}{unit}, ceiling "
                          f"<= {check.max:g}{unit} ({check.source}): over by {over:.1f}%")
    return value
