"""Whether an eval's items can decide its paired margin (verdicts/paired_items.py)."""

from __future__ import annotations

from pytest_rocm_llm.verdicts.paired import newcombe_paired_ci
from pytest_rocm_llm.verdicts.paired_items import decidability, items_to_decide


def test_gpqa_cannot_pass_two_points_even_with_identical_answers() -> None:
    # 198 items at GLM's published 90.3%, 0 discordant: the 98% interval alone is about
    # +-2.4 points (the 2.42), wider than a 2-point margin
    lo, _ = newcombe_paired_ci(179, 0, 0, 19, alpha=0.02)
    assert -0.025 < lo < -0.024
    d = decidability(198, 0.02, 0.903, q=0.0)
    assert d.decidable is False and d.needed is not None and d.needed > 198
    assert "198 items cannot decide it" in d.describe() and "repeats" in d.describe()


def test_more_discordance_or_a_tighter_margin_needs_more_items() -> None:
    base = items_to_decide(0.05, 0.8, q=0.05)
    assert base is not None
    assert items_to_decide(0.05, 0.8, q=0.10) > base  # type: ignore[operator]
    assert items_to_decide(0.02, 0.8, q=0.05) > base  # type: ignore[operator]
    assert decidability(base, 0.05, 0.8).decidable
    assert decidability(base - 1, 0.05, 0.8).decidable is False
    assert decidability(None, 0.05, 0.8).decidable is None  # tau2: count known at run time
