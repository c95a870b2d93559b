"""Exact power of the baseline gates' tests (issue 23 item 1), so "detects X%" is what the
gate really catches with the stated power.

- A stored (between-run) gate compares means of few trials with a pooled sample SD: its
  statistic is exactly noncentral t under normal trials. The old figure, (t(1-alpha) +
  t(power)) SE, adds two central quantiles and is optimistic at few runs (8.85 / 5.28 / 4.29
  SE at df 2 / 4 / 8 where the exact figures are 10.74 / 5.64 / 4.39): the sample SD is
  itself low-biased and random.
- A binomial gate's noise is set from the observed shares, so at the alternative the new
  side's variance is p(1-p) at the *lower* p; the normal figure with the variance at p on
  both sides said 2.91 points on GSM8K where 3.35 is caught 90% of the time. Its power
  here is the exact sum over both sides' binomial counts of the production rule.

Pure functions of numbers (scipy, numpy), imported lazily: loading the plugin stays light.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from statistics import NormalDist

_Z = NormalDist()


def _t_crit(alpha: float, df: float | None) -> float:
    if df is None or df > 1e6:
        return _Z.inv_cdf(1 - alpha)
    from scipy.stats import t

    return float(t.ppf(1 - alpha, df))


def t_power(ncp: float, df: float | None, alpha: float) -> float:
    """P(the one-sided test at ``alpha`` rejects) when the true shift is ``ncp`` standard
    errors: noncentral t on ``df`` degrees of freedom, normal when df is None."""
    crit = _t_crit(alpha, df)
    if df is None or df > 1e6:
        return 1 - _Z.cdf(crit - ncp)
    from scipy.stats import nct

    return float(nct.sf(crit, df, ncp))


@lru_cache(maxsize=512)
def se_units(alpha: float, power: float, df: float | None) -> float:
    """The true shift, in standard errors of the difference, rejected with probability
    ``power``: z(1-alpha) + z(power) for normal noise, the noncentral t root otherwise."""
    if df is None or df > 1e6:
        return _Z.inv_cdf(1 - alpha) + _Z.inv_cdf(power)
    from scipy.optimize import brentq

    lo = _t_crit(alpha, df)  # at ncp = crit the power is about 1/2
    hi = lo * 4 + 20
    return float(brentq(lambda d: t_power(d, df, alpha) - power, lo - 5, hi, xtol=1e-10))


def _support(n: int, p: float) -> tuple[object, object]:
    """(counts, probabilities) of Binomial(n, p), cut 9 SD (+ 3 counts) from the mean, where
    the tails weigh below 1e-15."""
    import numpy as np
    from scipy.stats import binom

    half = 9 * math.sqrt(n * p * (1 - p)) + 3
    k = np.arange(max(math.floor(n * p - half), 0), min(math.ceil(n * p + half), n) + 1)
    return k, binom.pmf(k, n, p)


def binomial_fail_prob(p_base: float, n_base: int, p_new: float, n_new: int, z: float,
                       tolerance: float = 0.0, higher_is_better: bool = True) -> float:
    """The exact probability that a gate on proportions fails on its regression side: base
    count ~ Bin(n_base, p_base), new count ~ Bin(n_new, p_new); a floor fails when new < base
    - z x sqrt(se_b^2 + se_n^2) - tolerance x base (a ceiling: new > base + the same), each
    se from its own observed share (as ``gate.binomial`` makes it)."""
    import numpy as np

    kb, wb = _support(n_base, min(max(p_base, 0.0), 1.0))
    kn, wn = _support(n_new, min(max(p_new, 0.0), 1.0))
    pb = np.asarray(kb, dtype=float)[:, None] / n_base
    pn = np.asarray(kn, dtype=float)[None, :] / n_new
    se = np.sqrt(pb * (1 - pb) / n_base + pn * (1 - pn) / n_new)
    allowed = z * se + tolerance * pb
    fail = pn < pb - allowed if higher_is_better else pn > pb + allowed
    return float(np.asarray(wb) @ fail.astype(float) @ np.asarray(wn))


def smallest_shift(power_of: Callable[[float], float], power: float, hi: float) -> float:
    """The smallest shift in [0, hi] whose power reaches ``power`` (bisection: power rises
    with the shift; a binomial one rises in small steps, so the answer is to 1e-5)."""
    lo = 0.0
    if power_of(hi) < power:
        return hi
    for _ in range(40):
        mid = (lo + hi) / 2
        if power_of(mid) >= power:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-5:
            break
    return hi


# Cached: a gate's observed share is a count over n, so a simulation of thousands of runs
# asks for a few dozen distinct figures.
@lru_cache(maxsize=8192)
def binomial_mde(p: float, n_base: int, n_new: int, alpha: float, power: float,
                 tolerance: float = 0.0, higher_is_better: bool = True) -> float | None:
    """The smallest absolute move from ``p`` the wrong way (a drop for a floor, a rise for a
    ceiling) that the proportion gate at one-sided ``alpha`` catches with ``power``; None
    when no move is (a handful of items)."""
    z = _Z.inv_cdf(1 - alpha)
    sign = -1.0 if higher_is_better else 1.0

    def power_of(d: float) -> float:
        return binomial_fail_prob(p, n_base, p + sign * d, n_new, z, tolerance,
                                  higher_is_better)

    room = p if higher_is_better else 1 - p
    if power_of(room) < power:
        return None  # even the largest possible move is caught less often than that
    return smallest_shift(power_of, power, room)


def unpooled_items(p: float, drop: float, alpha: float, power: float,
                   baseline_n: int | None) -> float | None:
    """Items per run (normal approximation, the variance at p on the baseline side and at
    p - drop on the new side, as the gate estimates them); None when out of reach."""
    z = _Z.inv_cdf(1 - alpha) + _Z.inv_cdf(power)
    v_base, v_new = max(p * (1 - p), 1e-12), max((p - drop) * (1 - p + drop), 1e-12)
    if baseline_n is None:
        return (v_base + v_new) * (z / drop) ** 2
    rest = (drop / z) ** 2 - v_base / baseline_n
    return None if rest <= 0 else v_new / rest


def ceil(x: float) -> int:
    return math.ceil(x - 1e-9)
