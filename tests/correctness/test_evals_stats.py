"""Accuracy statistics against published and hand-checked values."""

from __future__ import annotations

import math

import pytest
from scipy.stats import binom

from pytest_rocm_llm.correctness.accuracy.stats import binomial_floor, mcnemar, stderr


def test_binomial_floors_of_the_published_references() -> None:
    # GSM8K (1319 items at 95.5%) and GPQA-Diamond (198 at 90.3%), alpha 0.01
    assert binomial_floor(0.955, 1319, 0.01) == pytest.approx(0.941, abs=0.0005)
    assert binomial_floor(0.903, 198, 0.01) == pytest.approx(0.854, abs=0.0005)
    assert binomial_floor(0.955, 1319, 0.01, allowance=0.01) == \
        pytest.approx(binomial_floor(0.955, 1319, 0.01) - 0.01)


@pytest.mark.parametrize("p, n, alpha", [(0.5, 20, 0.05), (0.9, 198, 0.01), (0.3, 7, 0.2)])
def test_floor_is_the_exact_critical_value(p: float, n: int, alpha: float) -> None:
    k = round(binomial_floor(p, n, alpha) * n)
    assert binom.cdf(k - 1, n, p) <= alpha < binom.cdf(k, n, p)


def test_floor_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="need 0<=reference<=1"):
        binomial_floor(1.2, 10, 0.01)


def test_stderr() -> None:
    assert stderr(0.955, 1319) == pytest.approx(0.0057, abs=0.0001)
    assert math.isnan(stderr(0.5, 0))


def test_mcnemar_hand_checked() -> None:
    # 10 discordant items: A wrong/B right on 1, A right/B wrong on 9, 5 agree.
    a = [False] + [True] * 9 + [True] * 5
    b = [True] + [False] * 9 + [True] * 5
    # two-sided exact: 2 * P(X <= 1 | 10, 1/2) = 2 * 11/1024
    assert mcnemar(a, b) == (1, 9, pytest.approx(22 / 1024))
    assert mcnemar([True, False], [True, False]) == (0, 0, 1.0)
    with pytest.raises(ValueError, match="differ in length"):
        mcnemar([True], [True, False])
