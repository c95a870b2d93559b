"""What a gate can see: its minimum detectable regression, its power against a given one, and
the size (runs, items) that would reach a target.

Pure functions of the gate's noise model (verdicts/gate.py), so ``--llm-plan``, the report
and the calibration benchmark (benchmarks/bench_calibration.py) state the same figures.
The regression a gate catches with probability ``power`` is exact (verdicts/exact.py):
the noncentral t root times SE_diff for between-run gates, the binomial counts of both
sides for proportion gates, plus the tolerance; the benchmark re-measures each by
simulation through the production gate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_rocm_llm.config.checks import Gate
from pytest_rocm_llm.verdicts import exact
from pytest_rocm_llm.verdicts.gate import (
    BETWEEN_RUNS,
    DEFAULT_POWER,
    Measurement,
    binomial,
    detectable,
    noise,
    not_gated_reason,
)

MAX_RUNS = 100  # what a workload may declare (workloads.*.trials)
MAX_ITEMS = 1_000_000


def minimum_detectable(se_diff: float, alpha: float, power: float = DEFAULT_POWER,
                       df: float | None = None) -> float:
    """The smallest regression (absolute) detected with probability ``power`` at one-sided
    ``alpha``: exact noncentral t on ``df`` (normal when None)."""
    return exact.se_units(alpha, power, df) * se_diff


def power_against(regression: float, se_diff: float, alpha: float,
                  df: float | None = None) -> float:
    """The probability that a true regression of ``regression`` (absolute, > 0 is worse)
    fails a between-run gate at one-sided ``alpha``: exact noncentral t (normal without df;
    the old normal cdf around a t critical value read 0.937 at its own MDE, truly 0.859)."""
    if se_diff <= 0:
        return 1.0 if regression > 0 else 0.0
    return exact.t_power(regression / se_diff, df, alpha)


def binomial_power(p_base: float, n_base: int, p_new: float, n_new: int, gate: Gate) -> float:
    """The exact probability that ``gate`` fails a build whose true share is ``p_new`` over
    ``n_new`` items against a baseline of true share ``p_base`` over ``n_base`` (both drawn),
    on the regression side (a band spends alpha/2 there)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - gate.side_alpha)
    return exact.binomial_fail_prob(p_base, n_base, p_new, n_new, z, gate.tolerance,
                                    gate.kind != "ceiling")


@dataclass(frozen=True)
class Detectable:
    """A gated check's sensitivity as configured, for the plan and the report."""

    gated: bool
    mde: float | None  # absolute
    mde_pct: float | None  # relative to the baseline value
    basis: str  # the noise it rests on, or why the check is not gated

    def describe(self, unit: str = "") -> str:
        if not self.gated:
            return f"reported, not gated: {self.basis}"
        if self.mde is None:
            return (f"gated, but no regression is caught with {DEFAULT_POWER:.0%} power at "
                    f"this size ({self.basis})")
        u = f" {unit}" if unit else ""
        pct = f" ({self.mde_pct:.1f}%)" if self.mde_pct is not None else ""
        return (f"detects a regression of {self.mde:.3g}{u}{pct} at {DEFAULT_POWER:.0%} "
                f"power ({self.basis})")


def planned(baseline: Measurement, gate: Gate, runs: int = 1, n: int | None = None
            ) -> Detectable:
    """What the gate against ``baseline`` detects for a run of ``runs`` trials (performance)
    or ``n`` items (a binomial baseline), before anything runs."""
    if baseline.spread_kind == "binomial":
        items = n or baseline.n
        new = binomial(baseline.value, items)
    else:
        new = Measurement(baseline.value, 1, None, BETWEEN_RUNS if runs >= 2 else "stderr",
                          runs)
        if runs >= 2:  # the new run's own spread is expected to be the baseline's
            new = Measurement(baseline.value, 1, baseline.spread, BETWEEN_RUNS, runs)
    nz = noise(baseline, new)
    if nz is None:
        return Detectable(False, None, None, not_gated_reason(baseline))
    mde = detectable(baseline, new, gate)
    if mde is None:
        return Detectable(True, None, None, nz.basis)
    pct = mde / abs(baseline.value) * 100 if baseline.value else None
    return Detectable(True, mde, pct, nz.basis)


def runs_needed(sd: float, baseline_runs: int, value: float, regression_pct: float,
                alpha: float, power: float = DEFAULT_POWER, tolerance: float = 0.0
                ) -> int | None:
    """The fewest trials per run (the baseline recorded with as many) whose gate detects a
    ``regression_pct`` regression with ``power``; None when even MAX_RUNS do not."""
    target = abs(value) * regression_pct / 100
    for k in range(2, MAX_RUNS + 1):
        r = max(baseline_runs, k)
        se = sd * math.sqrt(1 / r + 1 / k)
        df = float(r + k - 2)
        if minimum_detectable(se, alpha, power, df) + tolerance * abs(value) <= target:
            return k
    return None


def items_needed(p: float, drop: float, alpha: float, power: float = DEFAULT_POWER,
                 baseline_n: int | None = None) -> int | None:
    """The fewest items per run whose binomial gate detects an absolute accuracy ``drop``
    with ``power`` (the baseline measured on ``baseline_n`` items, or as many as the run).
    The new side's variance is taken at p - drop, where the gate will estimate it: with p
    on both sides, 2,798 GSM8K items a side gave 83% power, not 90%. The normal count is
    then checked against the exact binomial power and raised until it holds."""
    guess = exact.unpooled_items(p, drop, alpha, power, baseline_n)
    if guess is None or guess > MAX_ITEMS:
        return None  # the baseline's own sampling error already exceeds the budget
    gate = Gate("floor", alpha)
    n = exact.ceil(guess)
    for _ in range(50):  # the exact power wobbles with n; step up in 0.2% strides
        if binomial_power(p, baseline_n or n, p - drop, n, gate) >= power:
            return n
        n = math.ceil(n * 1.002) + 1
    return n if n <= MAX_ITEMS else None


def describe_gate(gate: Gate | None, baseline: Measurement | None, runs: int = 1,
                  n: int | None = None, unit: str = "",
                  target_pct: float = 5.0, pending: str | None = None) -> str:
    """One line for ``--llm-plan`` and the report: what the baseline gate of a check will
    detect at its configured size (``runs`` trials, or ``n`` items), or why it reports
    only; where a ``target_pct`` regression is out of reach, the trials that reach it."""
    if gate is None:
        return "no baseline gate (the floor decides)"
    if baseline is None and pending is not None:
        return (f"none until measured ({pending}): reported, not gated; "
                "--llm-update-baselines records a measured run")
    if baseline is None:
        return ("no baseline stored yet: the first run records one"
                + ("" if runs >= 2 or n else "; with trials = 1 it will be reported, not "
                   "gated (set trials >= 2 on its workload)"))
    d = planned(baseline, gate, runs=runs, n=n)
    line = d.describe(unit)
    if (d.gated and baseline.spread_kind == BETWEEN_RUNS and d.mde_pct is not None
            and d.mde_pct > target_pct and baseline.spread is not None and baseline.value):
        k = runs_needed(baseline.spread, baseline.runs, baseline.value, target_pct,
                        gate.alpha, tolerance=gate.tolerance)
        line += (f"; a {target_pct:g}% regression needs trials = {k} (baseline re-recorded "
                 "with as many)" if k else f"; no trial count up to {MAX_RUNS} detects a "
                 f"{target_pct:g}% regression with tolerance {gate.tolerance:g}")
    return line
