"""The baseline gate: is a new measurement as good as the stored one, given the noise of both?

The margin comes from the recorded spreads, not from a fixed percentage: the gate fails when
the new value is worse than the baseline by more than ``z`` standard errors of the
difference (``z`` from the one-sided false-fail rate ``alpha``), plus the baseline's own
``tolerance`` (relative, 0 unless the baseline file says why it needs one). A baseline with
no spread (a published figure) contributes none, so only the new measurement's noise counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

Direction = Literal["higher", "lower"]
GateKind = Literal["floor", "ceiling", "band"]
DEFAULT_ALPHA = 0.01


@dataclass(frozen=True)
class Measurement:
    """A measured value with what is known of its noise."""

    value: float
    n: int = 1
    spread: float | None = None  # standard error of ``value``; None when unknown
    spread_kind: str = "stderr"


@dataclass(frozen=True)
class Gate:
    kind: GateKind
    alpha: float = DEFAULT_ALPHA
    tolerance: float = 0.0  # relative to the baseline value, on top of the noise margin


@dataclass(frozen=True)
class GateResult:
    passed: bool
    threshold_low: float | None
    threshold_high: float | None
    margin: float
    delta: float  # measured - baseline
    delta_pct: float | None  # relative to the baseline; None for a zero baseline

    def describe(self, unit: str = "") -> str:
        u = f" {unit}" if unit else ""
        parts = []
        if self.threshold_low is not None:
            parts.append(f">= {self.threshold_low:.4g}{u}")
        if self.threshold_high is not None:
            parts.append(f"<= {self.threshold_high:.4g}{u}")
        return " and ".join(parts) + f" (margin {self.margin:.3g}{u})"


def gate_kind_for(direction: Direction) -> GateKind:
    return "floor" if direction == "higher" else "ceiling"


def margin(baseline: Measurement, measured: Measurement, gate: Gate) -> float:
    """z * stderr of the difference + tolerance * |baseline|."""
    z = NormalDist().inv_cdf(1.0 - gate.alpha)
    variance = sum(s * s for s in (baseline.spread, measured.spread) if s is not None)
    return z * math.sqrt(variance) + gate.tolerance * abs(baseline.value)


def judge(baseline: Measurement, measured: Measurement, gate: Gate) -> GateResult:
    m = margin(baseline, measured, gate)
    low = baseline.value - m if gate.kind in ("floor", "band") else None
    high = baseline.value + m if gate.kind in ("ceiling", "band") else None
    ok = (low is None or measured.value >= low) and (high is None or measured.value <= high)
    delta = measured.value - baseline.value
    pct = delta / abs(baseline.value) * 100 if baseline.value else None
    return GateResult(ok, low, high, m, delta, pct)


def stderr_of_mean(values: list[float]) -> float | None:
    """Standard error of the mean of per-request or per-trial values (None below 2)."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return math.sqrt(var / n)


def binomial_stderr(p: float, n: int) -> float | None:
    if n <= 0:
        return None
    return math.sqrt(max(p * (1 - p), 0.0) / n)
