"""Paired verdicts (issue 14): the incumbent (build A) and the candidate (build B), one run.

The three-way rule, the A-B-B-A pairing (drift cancels), McNemar plus Newcombe's paired
interval for accuracy (checked against the paper's own worked examples), and greedy outputs
compared token by token with the near-tie rule."""

from __future__ import annotations

import json
import math
import random

import pytest

from pytest_rocm_llm.verdicts.paired import (
    OutputsChanged,
    balanced_order,
    classify,
    newcombe_paired_ci,
    outputs_changed,
    paired_accuracy,
    paired_performance,
)

# -- the schedule ---------------------------------------------------------------------------


def test_balanced_order_repeats_abba_blocks() -> None:
    assert balanced_order(2) == ["A", "B", "B", "A"]
    assert balanced_order(4) == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert balanced_order(1) == ["A", "B"]
    assert balanced_order(3) == ["A", "B", "B", "A", "A", "B"]
    for n in range(1, 9):
        order = balanced_order(n)
        assert order.count("A") == order.count("B") == n


def test_balanced_order_rejects_no_trials() -> None:
    with pytest.raises(ValueError, match="trials"):
        balanced_order(0)


# -- the three-way rule ---------------------------------------------------------------------


@pytest.mark.parametrize(("effect", "lo", "hi", "want"), [
    (-0.10, -0.15, -0.05, "regressed"),     # surely worse, by more than the tolerance
    (-0.01, -0.015, -0.005, "pass"),        # surely worse, but within tolerance, margin
    (0.10, 0.05, 0.15, "improved"),
    (0.01, 0.005, 0.015, "pass"),           # surely better, not by more than tolerance
    (0.0, -0.03, 0.03, "pass"),             # shown not worse than the 5% margin
    (0.0, -0.08, 0.08, "inconclusive"),     # too wide to say
    (-0.04, -0.09, 0.01, "inconclusive"),   # could be 9% worse, could be fine
])
def test_classify(effect: float, lo: float, hi: float, want: str) -> None:
    assert classify(effect, lo, hi, margin=0.05, tolerance=0.02) == want


def test_classify_without_significance_never_regresses() -> None:
    assert classify(-0.1, -0.15, -0.05, margin=0.05, tolerance=0.02,
                    significant=False) == "inconclusive"


# -- performance ----------------------------------------------------------------------------


def _abba_with_drift(effect: float, trials: int, drift: float, base: float = 100.0,
                     cv: float = 0.0, seed: int = 0) -> tuple[list[float], list[float]]:
    """Throughput of A and B measured in balanced order on a machine whose speed changes by
    ``drift`` (relative) per slot; B is ``effect`` faster (relative)."""
    rng = random.Random(seed)
    a: list[float] = []
    b: list[float] = []
    for slot, build in enumerate(balanced_order(trials)):
        speed = base * (1 + drift * slot) * math.exp(rng.gauss(0, cv))
        (a if build == "A" else b).append(speed * (1 + effect if build == "B" else 1.0))
    return a, b


def test_identical_builds_pass_under_linear_drift() -> None:
    a, b = _abba_with_drift(0.0, 8, drift=-0.01, cv=0.005)
    v = paired_performance("decode_speed", "output_tok_s", "tok/s", "higher", a, b)
    assert v.status == "pass", v.detail
    assert v.ci_low < 0 < v.ci_high
    assert v.n == 8


def test_a_always_first_turns_drift_into_a_regression() -> None:
    """vllm-ascend#17160: a machine slowing down makes B, measured after A, look slower.
    The same numbers paired as A-B-A-B... say regressed; measured A-B-B-A they pass."""
    rng = random.Random(1)
    order = ["A", "B"] * 8
    a: list[float] = []
    b: list[float] = []
    for slot, build in enumerate(order):
        (a if build == "A" else b).append(100 * (1 - 0.03 * slot) * math.exp(rng.gauss(0, 0.002)))
    v = paired_performance("decode_speed", "output_tok_s", "tok/s", "higher", a, b, order=order)
    assert v.status == "regressed", v.detail
    a2, b2 = _abba_with_drift(0.0, 8, drift=-0.03, cv=0.002, seed=1)
    assert paired_performance("decode_speed", "output_tok_s", "tok/s", "higher",
                              a2, b2).status == "pass"


def test_a_slower_candidate_is_regressed_and_the_delta_is_signed_as_measured() -> None:
    a, b = _abba_with_drift(-0.10, 6, drift=0.0, cv=0.01, seed=3)
    v = paired_performance("decode_speed", "output_tok_s", "tok/s", "higher", a, b)
    assert v.status == "regressed", v.detail
    assert v.delta == pytest.approx(-0.10, abs=0.02)
    assert v.ci_low < v.delta < v.ci_high < 0


def test_lower_is_better_flips_the_good_direction() -> None:
    # latency 10% up is a regression, 10% down an improvement
    up_a, up_b = _abba_with_drift(0.10, 6, drift=0.0, cv=0.01, seed=4)
    v = paired_performance("ttft", "ttft_p50_s", "s", "lower", up_a, up_b)
    assert v.status == "regressed" and v.delta > 0
    down_a, down_b = _abba_with_drift(-0.10, 6, drift=0.0, cv=0.01, seed=5)
    w = paired_performance("ttft", "ttft_p50_s", "s", "lower", down_a, down_b)
    assert w.status == "improved" and w.delta < 0


def test_noisy_trials_are_inconclusive_and_say_how_many_trials_would_decide() -> None:
    a, b = [100.0] * 4, [112.0, 90.0, 108.0, 92.0]  # no change on average, +-10% per pair
    v = paired_performance("decode_speed", "output_tok_s", "tok/s", "higher", a, b)
    assert v.status == "inconclusive"
    assert "trials per build" in v.detail
    needed = v.trials_needed
    assert needed is not None and needed > 4
    # as many trials at the same spread do decide, and half as many would not
    more = -(-needed // 4) * 4
    w = paired_performance("decode_speed", "output_tok_s", "tok/s", "higher", [100.0] * more,
                           b * (more // 4))
    assert w.status == "pass", w.detail
    half = needed // 8
    fewer = paired_performance("d", "m", "", "higher", [100.0] * (4 * half), b * half)
    assert fewer.status == "inconclusive"


def test_one_trial_each_is_inconclusive_and_names_the_minimum() -> None:
    v = paired_performance("decode_speed", "output_tok_s", "tok/s", "higher", [10.0], [5.0])
    assert v.status == "inconclusive"
    assert "at least 2 trials per build" in v.detail
    assert v.delta == pytest.approx(-0.5)
    assert math.isnan(v.ci_low)
    assert json.loads(json.dumps(v.to_json()))["ci_low"] is None  # JSON has no NaN


def test_pairs_follow_the_order_given() -> None:
    """A and B in time order; the i-th A pairs with the i-th B whatever the interleaving."""
    v = paired_performance("s", "m", "", "higher", [1.0, 2.0], [1.0, 2.0],
                           order=["A", "B", "B", "A"])
    # slots: A=1, B=1, B=2, A=2: pairs (1,1), (2,2): no change at all
    assert v.delta == pytest.approx(0.0) and v.ci_low == pytest.approx(0.0)
    assert v.status == "pass"


@pytest.mark.parametrize(("a", "b", "order", "match"), [
    ([1.0, 2.0], [1.0], None, "same number of trials"),
    ([1.0, 2.0], [1.0, 2.0], ["A", "A", "B"], "order"),
    ([1.0, -1.0], [1.0, 2.0], None, "finite values >= 0"),
    ([1.0, math.nan], [1.0, 2.0], None, "finite values >= 0"),
])
def test_bad_input_is_rejected(a: list[float], b: list[float], order: list[str] | None,
                               match: str) -> None:
    with pytest.raises(ValueError, match=match):
        paired_performance("s", "m", "", "higher", a, b, order=order)


def test_to_json_carries_every_field() -> None:
    a, b = _abba_with_drift(0.0, 4, drift=0.0, cv=0.01)
    j = paired_performance("decode_speed", "output_tok_s", "tok/s", "higher", a, b).to_json()
    for key in ("check", "metric", "unit", "direction", "incumbent", "candidate", "delta",
                "ci_low", "ci_high", "status", "n", "method", "detail"):
        assert key in j
    json.dumps(j)


# -- accuracy -------------------------------------------------------------------------------


@pytest.mark.parametrize(("both", "cand_only", "base_only", "neither", "lo", "hi"), [
    # Newcombe (1998), Statistics in Medicine 17:2635, method 10, the paper's examples
    (36, 12, 2, 0, 0.0569, 0.3404),
    (18, 12, 2, 18, 0.0562, 0.3290),
    (53, 0, 0, 1, -0.0729, 0.0729),
    (0, 30, 0, 0, 0.8395, 1.0),
])
def test_newcombe_interval_matches_the_paper(both: int, cand_only: int, base_only: int,
                                             neither: int, lo: float, hi: float) -> None:
    got = newcombe_paired_ci(both, cand_only, base_only, neither, alpha=0.05)
    assert got == pytest.approx((lo, hi), abs=1e-4)


def test_accuracy_same_answers_pass() -> None:
    answers = [i % 10 != 0 for i in range(400)]
    v = paired_accuracy("gsm8k", "accuracy", answers, answers)
    assert v.status == "pass" and v.delta == 0 and v.n == 400
    assert "McNemar" in v.method


def test_accuracy_drop_on_the_same_items_is_regressed() -> None:
    a = [True] * 380 + [False] * 20
    b = list(a)
    for i in range(0, 60, 2):  # B loses 30 items A got, gains none
        b[i] = False
    v = paired_accuracy("gsm8k", "accuracy", a, b)
    assert v.status == "regressed", v.detail
    assert v.delta == pytest.approx(-30 / 400)
    assert v.p_value is not None and v.p_value < 0.05
    assert v.delta_kind == "absolute"


def test_accuracy_few_items_are_inconclusive() -> None:
    a = [True, False, True, True, False]
    b = [True, True, False, True, False]
    assert paired_accuracy("gsm8k", "accuracy", a, b).status == "inconclusive"


def test_accuracy_no_items_is_inconclusive() -> None:
    v = paired_accuracy("gsm8k", "accuracy", [], [])
    assert v.status == "inconclusive" and v.n == 0


# -- greedy outputs -------------------------------------------------------------------------


def test_outputs_changed_counts_and_positions() -> None:
    a = [[1, 2, 3], [4, 5, 6], [7, 8], [9]]
    b = [[1, 2, 3], [4, 9, 6], [7, 8, 10], [9]]
    got = outputs_changed(a, b)
    assert (got.changed, got.n, got.near_ties) == (2, 4, 0)
    assert got.first_divergence == [None, 1, 2, None]
    assert got.summary() == "outputs changed on 2 of 4 prompts (0 at near ties)"


def test_near_ties_are_counted_from_a_top2_gaps() -> None:
    a = [[1, 2, 3], [4, 5, 6]]
    b = [[1, 7, 3], [4, 5, 9]]
    gaps = [[2.0, 0.03, 1.0], [1.0, 1.0, 0.5]]  # prompt 0 diverges at a near tie
    got = outputs_changed(a, b, a_top2_gaps=gaps)
    assert isinstance(got, OutputsChanged)
    assert (got.changed, got.near_ties) == (2, 1)
    assert got.summary() == "outputs changed on 2 of 2 prompts (1 at near ties)"


def test_near_ties_need_both_sides_close_when_b_gaps_are_given() -> None:
    """As parity's rule: each side prefers its own token by at most the tolerance."""
    a = [[1, 2, 3], [4, 5, 6]]
    b = [[1, 7, 3], [4, 8, 6]]
    a_gaps = [[2.0, 0.03, 1.0], [1.0, 0.05, 0.5]]
    b_gaps = [[2.0, 0.02, 1.0], [1.0, 3.0, 0.5]]  # prompt 1: B is sure of its token
    got = outputs_changed(a, b, a_top2_gaps=a_gaps, b_top2_gaps=b_gaps)
    assert (got.changed, got.near_ties) == (2, 1)


def test_outputs_changed_needs_the_same_prompts() -> None:
    with pytest.raises(ValueError, match="prompts"):
        outputs_changed([[1]], [[1], [2]])


def test_a_metric_at_zero_on_one_side_is_a_verdict_not_a_crash() -> None:
    # the candidate served nothing in one trial: no log ratio, and surely worse
    v = paired_performance("decode_speed", "tok_s", "tok/s", "higher", [10.0, 10.0, 10.0, 10.0],
                           [10.0, 0.0, 10.0, 10.0])
    assert v.status == "regressed" and "the candidate's in 1" in v.detail
    # a lower-is-better count at 0 on both builds: equal, a pass
    v = paired_performance("failures", "failed", "", "lower", [0.0] * 4, [0.0] * 4)
    assert v.status == "pass"
    v = paired_performance("failures", "failed", "", "lower", [0.0] * 4, [0.0, 2.0, 0.0, 0.0])
    assert v.status == "regressed"
