"""Standard errors, one function per kind of estimate. Pure; the lowest layer that reports a
spread (correctness's accuracy) and the one that gates on it (verdicts) share them."""

from __future__ import annotations

import math
from collections.abc import Sequence


def of_proportion(p: float, n: int) -> float | None:
    """sqrt(p(1-p)/n) of a share of ``n`` independent items; None without items."""
    if n <= 0:
        return None
    return math.sqrt(max(p * (1.0 - p), 0.0) / n)


def sample_sd(values: Sequence[float]) -> float | None:
    """The sample standard deviation (n - 1); None below two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


def of_mean(values: Sequence[float]) -> float | None:
    """Of the mean of per-request or per-trial values, with the n-1 sample variance; None
    below two values, where no spread can be estimated."""
    sd = sample_sd(values)
    return None if sd is None else sd / math.sqrt(len(values))
