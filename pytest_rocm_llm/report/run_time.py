"""The plan's whole-run time estimate: every server start, workload trial, sweep step and
evaluation a run would do, at stated speeds, so a CI job's timeout can be set above it
(issue 21). No pytest, no server in here.

Two figures. "Expected": the expected trials to a decision (a paired run), each start at the
target's typical start time. "At most": the trial budget, each start at --llm-start-timeout,
on GPU targets each preceded by the full VRAM wait. Both take every evaluation answer at its
max_tokens and every workload at the speeds below, so even "expected" errs long: it is the
figure a timeout must stand above, not a forecast.

Speeds, in this order: the target's own measured pace (the CPU reference, one model), else
the suite's floors for that target (a build that passes them is at least that fast): the
lowest single-stream output-speed floor, the highest aggregate output floor, and the prefill
rate the highest fixed-rate workload offers (rate x new prompt tokens). A speed neither gives
leaves that part unbounded, said by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite_model import Suite, profiles_of
from pytest_rocm_llm.config.targets import Target
from pytest_rocm_llm.config.workload import Workload

_STREAM = ("output_speed_tok_s",)
_BATCH = ("capacity_output_tok_s", "output_tok_s")


@dataclass(frozen=True)
class Speeds:
    decode_tok_s: float | None  # one stream's output tokens per second
    batch_tok_s: float | None  # output tokens per second across concurrent requests
    prefill_tok_s: float | None
    source: str


@dataclass(frozen=True)
class RunTime:
    """Seconds per part of a run; ``bound_*`` at the budget and the timeouts."""

    starts: int
    start_s: float
    start_bound_s: float
    workloads_s: float
    workloads_bound_s: float
    evaluations_s: float
    speeds: Speeds
    unbounded: tuple[str, ...]
    pace_source: str = ""
    wait: str = ""  # what else a start may wait for, said in the bound's line

    @property
    def expected_s(self) -> float:
        return self.starts * self.start_s + self.workloads_s + self.evaluations_s

    @property
    def bound_s(self) -> float:
        return self.start_bound_s + self.workloads_bound_s + self.evaluations_s

    def lines(self) -> list[str]:
        gaps = (f"; not bounded: {', '.join(self.unbounded)} (no speed to bound them)"
                if self.unbounded else "")
        return [f"estimated time: ~{_hm(self.expected_s)} expected, at most ~"
                f"{_hm(self.bound_s)} (every start and trial at its limit; a CI job's "
                f"timeout belongs above it){gaps}",
                f"  server starts: {self.starts} at ~{self.start_s:.0f} s each "
                f"({self.pace_source}); at most {self.start_bound_s:.0f} s in all "
                f"(every start taking --llm-start-timeout{self.wait})",
                f"  workloads and sweep steps: ~{self.workloads_s:.0f} s" + (
                    f" at the expected trials, at most ~{self.workloads_bound_s:.0f} s at the "
                    "budget" if self.workloads_bound_s > self.workloads_s else ""),
                f"  evaluations: ~{self.evaluations_s:.0f} s, every answer at its max_tokens",
                f"  speeds: {self.speeds.source}"]


def _hm(seconds: float) -> str:
    minutes = math.ceil(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def suite_speeds(suite: Suite, target: Target) -> Speeds:
    """The speeds the estimate assumes (see the module's note)."""
    pace = target.pace
    if pace.decode_tok_s is not None:
        return Speeds(pace.decode_tok_s, pace.batch_tok_s or pace.decode_tok_s,
                      pace.prefill_tok_s, pace.source)
    checks = [c for c in suite.checks_for(target) if c.relative_to is None]

    def floors(metrics: tuple[str, ...]) -> list[float]:
        return [float(c.min) for c in checks if c.metric in metrics and c.min]

    stream, batch = floors(_STREAM), floors(_BATCH)
    offered = [w.request_rate * w.input_tokens * (1 - w.cache_hit)
               for w in (suite.workload_for(n, target) for n in suite.workloads)
               if w.arrivals == "at_a_rate" and w.request_rate]
    decode = min(stream) if stream else None
    return Speeds(decode, max(batch) if batch else decode, max(offered) if offered else None,
                  "the suite's floors on this target: single stream "
                  f"{_tok(decode)}, aggregate output {_tok(max(batch) if batch else None)}, "
                  f"prefill {_tok(max(offered) if offered else None)} (the fixed-rate "
                  "workload's offered new prompt tokens)")


def _tok(x: float | None) -> str:
    return "none" if x is None else f"{x:g} tok/s"


def workload_s(w: Workload, sp: Speeds) -> float | None:
    """One run of ``w`` (its own trials and warm-up included)."""
    if sp.decode_tok_s is None:
        return None
    one = w.output_tokens / sp.decode_tok_s + (
        w.input_tokens * (1 - w.cache_hit) / sp.prefill_tok_s if sp.prefill_tok_s else 0.0)
    if w.arrivals == "one_at_a_time":
        return (w.requests * w.trials + w.warmup) * one
    rates = w.rates or ((w.request_rate,) if w.request_rate else ())
    # arrivals over each rate, then the last request's own time to drain
    return w.warmup * one + w.trials * sum(w.requests / r + one for r in rates)


def evaluation_s(config: Any, sp: Speeds) -> float | None:
    """One build's run of an evaluation, every answer at its max_tokens."""
    decode, prefill = sp.decode_tok_s, sp.prefill_tok_s or math.inf
    if decode is None:
        return None
    # each kind's config says what one of its runs costs; one that does not is not estimated
    estimated = getattr(config, "estimated_s", None)
    return None if estimated is None else float(estimated(decode, prefill, sp.batch_tok_s))


def profiles_used(suite: Suite, target: Target) -> set[str]:
    """Every profile a run of the suite's checks serves."""
    used: set[str] = set()
    for c in suite.checks_for(target):
        if c.workload is not None:
            used.add(suite.workload_for(c.workload, target).profile or suite.default_profile)
        elif c.eval is not None:
            used.update(p or suite.default_profile
                        for p in profiles_of(suite.eval_for(c.eval, target)))
    return used


def estimate(suite: Suite, target: Target, settings: Settings, *, starts: int | None = None,
             starts_bound: int | None = None, trials: float = 1.0, budget_trials: float = 1.0,
             builds: int = 1) -> RunTime:
    """The run's time: each workload a paired check reads run ``trials`` times per build
    (``budget_trials`` for the bound) on ``builds`` builds, any other workload once, each
    evaluation on every build, and ``starts`` server starts (default: one per profile;
    ``starts_bound`` at the budget, default the same)."""
    sp = suite_speeds(suite, target)
    checks = suite.checks_for(target)
    paired = {c.workload for c in checks if c.workload is not None and c.relative_to is None}
    names = [n for c in checks for n in (c.workload, c.relative_to) if n is not None]
    unbounded: list[str] = []
    work = work_bound = evals = 0.0
    for name in dict.fromkeys(names):
        w = suite.workload_for(name, target)
        if builds > 1 and name in paired:  # a paired trial is one run (paired_trials.py)
            w = replace(w, trials=1)
        t = workload_s(w, sp)
        if t is None:
            unbounded.append(name)
            continue
        runs = (builds * trials, builds * budget_trials) if name in paired else (1.0, 1.0)
        work, work_bound = work + t * runs[0], work_bound + t * runs[1]
    for name in dict.fromkeys(c.eval for c in checks if c.eval is not None):
        t = evaluation_s(suite.eval_for(name, target), sp)
        if t is None:
            unbounded.append(name)
        else:
            evals += t * builds
    n = len(profiles_used(suite, target)) if starts is None else starts
    per_start = settings.start_timeout_s + (target.vram_wait_s if target.is_gpu else 0.0)
    most = n if starts_bound is None else starts_bound
    wait = f" after a VRAM wait of up to {target.vram_wait_s:.0f} s" if target.is_gpu else ""
    return RunTime(n, target.pace.start_s, most * per_start, work, work_bound, evals, sp,
                   tuple(unbounded), target.pace.source, wait)
