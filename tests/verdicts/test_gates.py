"""Properties of the baseline gate: monotone in the measured value, a value equal to its
baseline passes, the direction is respected, the margin comes from run-to-run noise only
(between runs, or binomial), and without it the metric is reported, not gated."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rocm_llm.config.checks import Gate
from pytest_rocm_llm.verdicts.gate import Measurement, judge, margin

values = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
spreads = st.one_of(st.none(), st.floats(min_value=0.0, max_value=1e3))
kinds = st.sampled_from(["floor", "ceiling", "band"])
alphas = st.floats(min_value=1e-4, max_value=0.2)
tolerances = st.floats(min_value=0.0, max_value=0.5)


def runs_or_none(value: float, sd: float | None) -> Measurement:
    return Measurement(value, 10, sd, "between_runs", 3)


@given(values, spreads, spreads, kinds, alphas, tolerances)
def test_equal_to_baseline_passes(v, s1, s2, kind, alpha, tol):
    assert judge(runs_or_none(v, s1), runs_or_none(v, s2), Gate(kind, alpha, tol)).passed


@pytest.mark.parametrize("kind", ["floor", "ceiling"])
@given(values, spreads, values, values, spreads, alphas, tolerances)
def test_a_one_sided_gate_is_monotone(kind, base, bs, a, b, ms, alpha, tol):
    """A value that passes a floor passes when higher; one that passes a ceiling, when lower."""
    worse, better = sorted((a, b), reverse=kind == "ceiling")
    gate = Gate(kind, alpha, tol)
    if judge(runs_or_none(base, bs), runs_or_none(worse, ms), gate).passed:
        assert judge(runs_or_none(base, bs), runs_or_none(better, ms), gate).passed


def runs(value: float, sd: float = 0.0, k: int = 3) -> Measurement:
    """A value measured as the mean of ``k`` trials whose SD is ``sd``."""
    return Measurement(value, 10, sd, "between_runs", k)


@given(values, st.floats(min_value=1.01, max_value=100.0))
def test_direction_is_respected(base, factor):
    """Better is never a regression; far worse always is (no spread, no tolerance)."""
    b = runs(base)
    assert judge(b, runs(base * factor), Gate("floor")).passed
    assert not judge(b, runs(base / factor), Gate("floor")).passed
    assert judge(b, runs(base / factor), Gate("ceiling")).passed
    assert not judge(b, runs(base * factor), Gate("ceiling")).passed
    assert not judge(b, runs(base * factor), Gate("band")).passed


def test_a_binomial_margin_is_z_times_the_stderr_of_the_difference():
    m = margin(Measurement(0.9, 100, 3.0, "binomial"), Measurement(0.8, 100, 4.0, "binomial"),
               Gate("floor", 0.01))
    assert m == pytest.approx(2.3263 * 5.0, rel=1e-3)
    # The tolerance is relative to the baseline, on top.
    assert margin(Measurement(200.0, 1, 0.0, "binomial"), Measurement(1.0, 1, 0.0, "binomial"),
                  Gate("floor", 0.01, 0.1)) == pytest.approx(20.0)


def test_a_between_run_margin_is_t_times_the_se_of_a_difference_of_means():
    """SD 4 estimated from 3 + 3 trials (pooled, 4 degrees of freedom): SE of the difference
    4 * sqrt(1/3 + 1/3), critical value t(0.99, 4) = 3.747, not z = 2.326."""
    m = margin(runs(100.0, 4.0), runs(95.0, 4.0), Gate("floor", 0.01))
    assert m == pytest.approx(3.7469 * 4.0 * (2 / 3) ** 0.5, rel=1e-3)
    # A single new run is noisy by the baseline's SD too (1/3 + 1/1), on 2 df.
    single = margin(runs(100.0, 4.0), Measurement(95.0, 10, 0.1), Gate("floor", 0.01))
    assert single == pytest.approx(6.9646 * 4.0 * (4 / 3) ** 0.5, rel=1e-3)


def test_within_run_noise_is_never_used_as_between_run_noise():
    """A median's standard error over one run's requests says nothing of the next run: no
    margin, no gate, no alpha, only a report."""
    base, new = Measurement(100.0, 10, 0.5, "stderr"), Measurement(50.0, 10, 0.5, "stderr")
    assert margin(base, new, Gate("floor")) is None
    r = judge(base, new, Gate("floor"))
    assert r.passed and not r.gated and r.alpha is None and r.mde is None
    assert r.describe().startswith("reported, not gated: the baseline's spread is within one")
    assert "alpha" not in r.describe()
    published = judge(Measurement(213.0), Measurement(150.0, 10, 2.0), Gate("floor"))
    assert not published.gated and "no between-run spread" in published.describe()


def test_noise_decides():
    """The same 5% shortfall passes with noisy runs and fails with steady ones."""
    gate = Gate("floor", 0.01)
    assert judge(runs(100.0, 4.0), runs(95.0, 4.0), gate).passed
    r = judge(runs(100.0, 0.5, 10), runs(95.0, 0.5, 10), gate)
    assert not r.passed and r.delta_pct == pytest.approx(-5.0)
    assert r.gated and r.alpha == 0.01 and "alpha 0.01" in r.describe("tok/s")
    # exact noncentral t at df 18: 3.9095 SE (t + t said 2.5524 + 1.3304)
    assert r.mde_pct == pytest.approx(3.9095 * 0.5 * 0.2 ** 0.5, rel=1e-3)
