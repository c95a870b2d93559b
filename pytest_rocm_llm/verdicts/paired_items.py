"""Whether an evaluation's items can decide its paired margin (issue 22 item 3). No pytest.

A paired accuracy verdict "passes" when Newcombe's interval of the candidate's minus the
incumbent's accuracy lies above -margin (verdicts/paired.py). Its width has a floor set by the
item count alone: with bit-identical answers on GPQA-Diamond's 198 items the 98% interval is
still +-2.4 points, so a 2-point margin can never pass, whatever the builds do. A check whose
items cannot decide its margin is reported with that reason and does not fail the run; it
still fails on "regressed" (a drop the interval places below 0).

"Can decide" here: an unchanged build passes with probability ``POWER`` (the run's power) at
the run's alpha, when the two builds answer a share ``DISCORDANCE`` of the items differently,
half each way. The lower end is Newcombe's at the expected counts, lowered by the estimate's
own spread z_power * sqrt(q / n). The share is an ASSUMPTION (an upgrade's numerics flip
some greedy answers; 0 for bit-identical ones): ``DISCORDANCE`` unless the eval declares
``paired_discordance`` in suite.toml beside its ``paired_margin`` (points), stated in the plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from pytest_rocm_llm.verdicts.paired import DEFAULT_ALPHA, newcombe_paired_ci

POWER = 0.90
DISCORDANCE = 0.05  # assumed share of items two builds answer differently
MAX_ITEMS = 1_000_000


def passes_unchanged(n: int, margin: float, p: float, alpha: float = DEFAULT_ALPHA,
                     power: float = POWER, q: float = DISCORDANCE) -> bool:
    """Would ``n`` items let an unchanged build pass ``margin`` (a proportion) at accuracy
    ``p`` with probability ``power``?"""
    if n < 1:
        return False
    flips = n * q / 2
    both = max(n * p - flips, 0.0)
    neither = max(n - both - 2 * flips, 0.0)
    lo, _ = newcombe_paired_ci(round(both), round(flips), round(flips), round(neither),
                               alpha=alpha)
    spread = NormalDist().inv_cdf(power) * math.sqrt(q / n)
    return lo - spread > -margin


def items_to_decide(margin: float, p: float, alpha: float = DEFAULT_ALPHA,
                    power: float = POWER, q: float = DISCORDANCE) -> int | None:
    """The fewest items that would (None: not even MAX_ITEMS)."""
    if not passes_unchanged(MAX_ITEMS, margin, p, alpha, power, q):
        return None
    lo, hi = 1, MAX_ITEMS
    while lo < hi:  # the interval narrows as n grows
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if passes_unchanged(mid, margin, p, alpha, power, q) else (mid + 1,
                                                                                      hi)
    return lo


@dataclass(frozen=True)
class Decidability:
    n: int | None  # items per build (None: unknown before the run, e.g. tau2 without limit)
    margin: float  # a proportion
    needed: int | None
    p: float
    q: float = DISCORDANCE

    @property
    def decidable(self) -> bool | None:
        if self.n is None:
            return None
        return self.needed is not None and self.n >= self.needed

    def describe(self) -> str:
        head = (f"margin {self.margin * 100:g} points at accuracy ~{self.p:.0%}, assuming "
                f"{self.q:.0%} of items answered differently")
        if self.needed is None:
            return f"{head}: no item count can decide it (widen the margin)"
        if self.n is None:
            return f"{head}: needs {self.needed} items (the count is known only when it runs)"
        if self.n >= self.needed:
            return f"{head}: {self.n} items can decide it (needs {self.needed})"
        repeats = math.ceil(self.needed / self.n)
        return (f"{head}: {self.n} items cannot decide it; {self.needed} would (more items, "
                f"or {repeats} repeats of these with other seeds at temperature > 0, as "
                f"GPQA's published method runs its 198 twice)")


def decidability(n: int | None, margin: float, p: float | None, q: float = DISCORDANCE,
                 alpha: float = DEFAULT_ALPHA) -> Decidability:
    """``p``: the expected accuracy (a reference score, the floor, or the measured one);
    None: 0.5, where the interval is widest. ``q``: the assumed discordant share."""
    acc = 0.5 if p is None else min(max(p, 0.0), 1.0)
    return Decidability(n, margin, items_to_decide(margin, acc, alpha, q=q), acc, q)
