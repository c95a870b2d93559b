"""The baseline gate: is a new measurement as good as the stored one, given the noise of both?

Only noise that describes how a value moves from run to run may set the margin:

- ``between_runs``: the sample SD of one run's value across repeated runs (trials), with the
  number of runs it came from. The stored value and the new one are means of runs, so the
  noise of their difference is ``sd * sqrt(1/runs_baseline + 1/runs_new)``, with the SD
  pooled from both sides when the new run has trials of its own. The SD is an estimate from
  few runs, so the critical value is Student's t on the pooled degrees of freedom (z as they
  grow); a z here would fail an unchanged build ~4% of the time with 3 + 3 runs.
- ``binomial``: a proportion over ``n`` items (accuracy); its noise follows from ``n``, so
  the critical value is z.

A within-run standard error (``stderr``, ``iqr``: the spread of one run's requests) is not
run-to-run noise: a median over 10 requests can be precise while the next run lands 7% away.
A baseline without run-to-run noise is therefore reported, never gated, and no false-fail
rate is claimed for it.

A between-run spread is only as wide as the runs it came from (``scope``): trials run back
to back in one session ("session", what a workload with trials records) leave out the
drift between server restarts and days, so the gate's alpha holds for a build judged in
the same conditions; against a later session, with 1-2% drift between sessions and 1%
trial CV, an unchanged build failed 14-27% of the time. The row says which alpha it claims;
a baseline whose spread was gathered across sessions ("sessions") claims it across them.

The baseline's ``tolerance`` (relative, stated in suite.toml) is added on top of the noise
margin where a gate exists. A band spends alpha/2 on each side (``Gate.side_alpha``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from pytest_rocm_llm.config.checks import Gate
from pytest_rocm_llm.standard_error import of_mean, of_proportion, sample_sd

DEFAULT_POWER = 0.9
# Spread kinds that describe run-to-run noise, and those that only describe one run.
BETWEEN_RUNS = "between_runs"
BINOMIAL = "binomial"
WITHIN_RUN = ("stderr", "iqr")


@dataclass(frozen=True)
class Measurement:
    """A measured value with what is known of its noise (see the module docstring for the
    kinds). ``runs``: how many runs ``value`` is the mean of (the between-run spread's
    count)."""

    value: float
    n: int = 1
    spread: float | None = None
    spread_kind: str = "stderr"
    runs: int = 1
    # between_runs only: "session" (trials back to back in one server session) or "sessions"
    # (runs gathered across sessions, so the drift between them is in the spread)
    scope: str | None = None

    @property
    def between_runs(self) -> bool:
        return self.spread_kind == BETWEEN_RUNS and self.spread is not None and self.runs >= 2


@dataclass(frozen=True)
class Noise:
    """The standard error of (new - baseline) and the distribution its statistic follows."""

    se_diff: float
    df: float | None  # Student's t degrees of freedom; None: normal (z)
    basis: str  # in words, for the verdict row

    def critical(self, p: float) -> float:
        return quantile(p, self.df)


@dataclass(frozen=True)
class GateResult:
    passed: bool
    threshold_low: float | None
    threshold_high: float | None
    margin: float | None  # None: not gated
    delta: float  # measured - baseline
    delta_pct: float | None  # relative to the baseline; None for a zero baseline
    gated: bool = True
    alpha: float | None = None  # the false-fail rate the gate holds; None when not gated
    mde: float | None = None  # smallest regression caught with DEFAULT_POWER, absolute
    mde_pct: float | None = None  # the same, relative to the baseline (percent)
    basis: str = ""  # what the noise is, or why there is no gate
    # where the alpha holds: "session" (within the baseline's kind of session only),
    # "sessions" (across them); None for binomial noise, which holds wherever it is drawn
    alpha_scope: str | None = None

    def describe(self, unit: str = "") -> str:
        if not self.gated:
            return f"reported, not gated: {self.basis}"
        u = f" {unit}" if unit else ""
        parts = []
        if self.threshold_low is not None:
            parts.append(f">= {self.threshold_low:.4g}{u}")
        if self.threshold_high is not None:
            parts.append(f"<= {self.threshold_high:.4g}{u}")
        detect = (f"; detects {self.mde_pct:.1f}%" if self.mde_pct is not None else
                  "; no regression caught" if self.mde is None else "")
        return (" and ".join(parts) + f" (margin {self.margin:.3g}{u}, alpha {self.alpha:g}, "
                f"{SCOPE_TEXT.get(self.alpha_scope or '', '')}{self.basis}{detect} at "
                f"{DEFAULT_POWER:.0%} power)")


SCOPE_TEXT = {
    "session": "holding within one session, not across sessions (the baseline's trials ran "
               "back to back, so the drift between sessions is not in its spread), ",
    "sessions": "holding across sessions (the baseline's runs span sessions), ",
}


def quantile(p: float, df: float | None) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (normal if None)."""
    if df is None or df > 1e6:
        return NormalDist().inv_cdf(p)
    from scipy.stats import t

    return float(t.ppf(p, df))


def pooled_sd(a: Measurement, b: Measurement) -> tuple[float, float]:
    """(pooled SD, degrees of freedom) of two between-run spreads; one side may be a single
    run (it then contributes no estimate)."""
    sides = [m for m in (a, b) if m.between_runs]
    df = sum(m.runs - 1 for m in sides)
    var = sum((m.runs - 1) * (m.spread or 0.0) ** 2 for m in sides) / df
    return math.sqrt(var), float(df)


def noise(baseline: Measurement, measured: Measurement) -> Noise | None:
    """The noise of the difference, or None when nothing known describes it."""
    if baseline.spread_kind == BINOMIAL:
        ses = [m.spread for m in (baseline, measured)
               if m.spread_kind == BINOMIAL and m.spread is not None]
        se = math.sqrt(sum(s * s for s in ses))
        return Noise(se, None, f"binomial noise over n={baseline.n} and n={measured.n}")
    if not baseline.between_runs:
        return None
    sd, df = pooled_sd(baseline, measured)
    runs_new = measured.runs if measured.spread_kind == BETWEEN_RUNS else 1
    se = sd * math.sqrt(1 / baseline.runs + 1 / max(runs_new, 1))
    return Noise(se, df, f"between-run SD {sd:.3g} over {baseline.runs} + {runs_new} runs")


def not_gated_reason(baseline: Measurement) -> str:
    if baseline.spread_kind == BETWEEN_RUNS:
        return (f"the baseline's between-run spread comes from {baseline.runs} run(s); "
                "record it with trials >= 2")
    if baseline.spread is None:
        return "the baseline carries no between-run spread (record it with trials >= 2)"
    return (f"the baseline's spread is within one run ({baseline.spread_kind}), not between "
            "runs (record it with trials >= 2)")


def margin(baseline: Measurement, measured: Measurement, gate: Gate) -> float | None:
    """critical value x the noise of the difference + tolerance x |baseline|; None when
    there is no run-to-run noise to set it."""
    nz = noise(baseline, measured)
    if nz is None:
        return None
    return (nz.critical(1.0 - gate.side_alpha) * nz.se_diff
            + gate.tolerance * abs(baseline.value))


def detectable(baseline: Measurement, measured: Measurement, gate: Gate,
               power: float = DEFAULT_POWER) -> float | None:
    """The smallest regression (absolute) the gate catches with probability ``power``,
    exactly (verdicts/exact.py): noncentral t for a between-run gate, the binomial counts of
    both sides for a proportion (the baseline's share as the truth, its n and the new n)."""
    from pytest_rocm_llm.verdicts import exact

    nz = noise(baseline, measured)
    if nz is None:
        return None
    tol = gate.tolerance * abs(baseline.value)
    if baseline.spread_kind == BINOMIAL and measured.spread_kind == BINOMIAL:
        return exact.binomial_mde(baseline.value, baseline.n, measured.n, gate.side_alpha,
                                  power, gate.tolerance, gate.kind != "ceiling")
    return exact.se_units(gate.side_alpha, power, nz.df) * nz.se_diff + tol


def judge(baseline: Measurement, measured: Measurement, gate: Gate) -> GateResult:
    delta = measured.value - baseline.value
    pct = delta / abs(baseline.value) * 100 if baseline.value else None
    m = margin(baseline, measured, gate)
    nz = noise(baseline, measured)
    if m is None or nz is None:
        return GateResult(True, None, None, None, delta, pct, gated=False,
                          basis=not_gated_reason(baseline))
    low = baseline.value - m if gate.kind in ("floor", "band") else None
    high = baseline.value + m if gate.kind in ("ceiling", "band") else None
    ok = (low is None or measured.value >= low) and (high is None or measured.value <= high)
    mde = detectable(baseline, measured, gate)
    mde_pct = mde / abs(baseline.value) * 100 if mde is not None and baseline.value else None
    scope = (baseline.scope or "session") if baseline.spread_kind == BETWEEN_RUNS else None
    return GateResult(ok, low, high, m, delta, pct, gated=True, alpha=gate.alpha, mde=mde,
                      mde_pct=mde_pct, basis=nz.basis, alpha_scope=scope)


# One implementation of each standard error for the whole package (standard_error.py).
stderr_of_mean = of_mean
binomial_stderr = of_proportion


def between_runs(values: list[float], n: int = 1, scope: str = "session") -> Measurement:
    """A value measured as the mean of repeated runs, with their spread (``n``: requests or
    items behind it; ``scope``: one session's trials unless said otherwise)."""
    return Measurement(sum(values) / len(values), max(n, 1), sample_sd(values), BETWEEN_RUNS,
                       len(values), scope)


def binomial(p: float, n: int) -> Measurement:
    """A proportion over ``n`` items, with its binomial noise."""
    return Measurement(p, max(n, 1), binomial_stderr(p, n), BINOMIAL)
