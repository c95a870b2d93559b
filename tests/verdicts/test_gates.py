"""Properties of the baseline gate: monotone in the measured value, a value equal to its
baseline passes, the direction is respected, and the margin comes from the spreads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rocm_llm.verdicts.gate import Gate, Measurement, judge, margin

values = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
spreads = st.one_of(st.none(), st.floats(min_value=0.0, max_value=1e3))
kinds = st.sampled_from(["floor", "ceiling", "band"])
alphas = st.floats(min_value=1e-4, max_value=0.2)
tolerances = st.floats(min_value=0.0, max_value=0.5)


@given(values, spreads, spreads, kinds, alphas, tolerances)
def test_equal_to_baseline_passes(v, s1, s2, kind, alpha, tol):
    assert judge(Measurement(v, 5, s1), Measurement(v, 5, s2), Gate(kind, alpha, tol)).passed


@given(values, spreads, values, values, spreads, alphas, tolerances)
def test_floor_is_monotone(base, bs, a, b, ms, alpha, tol):
    lo, hi = sorted((a, b))
    gate = Gate("floor", alpha, tol)
    if judge(Measurement(base, 3, bs), Measurement(lo, 3, ms), gate).passed:
        assert judge(Measurement(base, 3, bs), Measurement(hi, 3, ms), gate).passed


@given(values, spreads, values, values, spreads, alphas, tolerances)
def test_ceiling_is_monotone(base, bs, a, b, ms, alpha, tol):
    lo, hi = sorted((a, b))
    gate = Gate("ceiling", alpha, tol)
    if judge(Measurement(base, 3, bs), Measurement(hi, 3, ms), gate).passed:
        assert judge(Measurement(base, 3, bs), Measurement(lo, 3, ms), gate).passed


@given(values, st.floats(min_value=1.01, max_value=100.0))
def test_direction_is_respected(base, factor):
    """Better is never a regression; far worse always is (no spread, no tolerance)."""
    b = Measurement(base)
    assert judge(b, Measurement(base * factor), Gate("floor")).passed
    assert not judge(b, Measurement(base / factor), Gate("floor")).passed
    assert judge(b, Measurement(base / factor), Gate("ceiling")).passed
    assert not judge(b, Measurement(base * factor), Gate("ceiling")).passed
    assert not judge(b, Measurement(base * factor), Gate("band")).passed


def test_margin_is_z_times_stderr_of_the_difference():
    m = margin(Measurement(100.0, 10, 3.0), Measurement(95.0, 10, 4.0), Gate("floor", 0.01))
    assert m == pytest.approx(2.3263 * 5.0, rel=1e-3)
    # A published figure has no spread: only the new measurement's noise counts.
    assert margin(Measurement(213.0), Measurement(200.0, 8, 2.0), Gate("floor", 0.01)) == \
        pytest.approx(2.3263 * 2.0, rel=1e-3)
    # The tolerance is relative to the baseline, on top.
    assert margin(Measurement(200.0), Measurement(1.0), Gate("floor", 0.01, 0.1)) == \
        pytest.approx(20.0)


def test_noise_decides():
    """The same 5% shortfall passes with noisy measurements and fails with precise ones."""
    gate = Gate("floor", 0.01)
    assert judge(Measurement(100.0, 5, 3.0), Measurement(95.0, 5, 3.0), gate).passed
    r = judge(Measurement(100.0, 50, 0.5), Measurement(95.0, 50, 0.5), gate)
    assert not r.passed and r.delta_pct == pytest.approx(-5.0)
