"""The shared standard errors, against values worked by hand."""

from __future__ import annotations

import math

import pytest

from pytest_rocm_llm.correctness.accuracy.stats import stderr
from pytest_rocm_llm.standard_error import of_mean, of_proportion


def test_of_proportion() -> None:
    assert of_proportion(0.5, 100) == pytest.approx(0.05)
    assert of_proportion(0.0, 10) == 0.0 and of_proportion(1.0, 10) == 0.0
    assert of_proportion(0.5, 0) is None
    # the accuracy metric keeps its float NaN for an empty run
    assert stderr(0.955, 1319) == of_proportion(0.955, 1319)
    assert math.isnan(stderr(float("nan"), 0))


def test_of_mean() -> None:
    # values 1, 2, 3: sample variance 1, so sqrt(1/3)
    assert of_mean([1.0, 2.0, 3.0]) == pytest.approx(math.sqrt(1 / 3))
    assert of_mean([4.0]) is None and of_mean([]) is None
