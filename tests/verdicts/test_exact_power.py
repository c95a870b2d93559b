"""The "detects X%" figures are exact (issue 23 items 1 and 3): noncentral t for stored
gates, the binomial distribution itself for proportion gates, unpooled variances in the
item counts, and a band that spends alpha/2 per side. The reference figures are the
outside check's (scipy's nct, exact binomial enumeration)."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_rocm_llm.config.checks import Gate
from pytest_rocm_llm.verdicts.gate import Measurement, between_runs, binomial, judge, margin
from pytest_rocm_llm.verdicts.power import (
    binomial_power,
    items_needed,
    minimum_detectable,
    planned,
    power_against,
)


@pytest.mark.parametrize(("runs", "units"), [(2, 10.74), (3, 5.64), (5, 4.39)])
def test_stored_gate_mde_is_the_noncentral_t_one(runs: int, units: float) -> None:
    # runs + runs trials: df = 2 runs - 2; the t + t sum said 8.85 / 5.28 / 4.29.
    assert minimum_detectable(1.0, 0.01, 0.9, df=2 * runs - 2) == pytest.approx(units, abs=0.01)


def test_power_against_is_exact_at_its_own_mde_and_at_the_old_figure() -> None:
    assert power_against(minimum_detectable(2.0, 0.01, 0.9, df=4), 2.0, 0.01, df=4) \
        == pytest.approx(0.9, abs=1e-6)
    # the old t + t figure (5.28 SE) is caught 85.9% of the time, not 93.7%
    assert power_against(3.7469 + 1.5332, 1.0, 0.01, df=4) == pytest.approx(0.859, abs=0.002)


def test_stored_gate_catches_its_stated_regression_90_percent_of_the_time() -> None:
    rng = np.random.default_rng(7)
    sd, k = 2.0, 3
    mde = planned(Measurement(100.0, 1, sd, "between_runs", k), Gate("floor"), runs=k).mde
    assert mde is not None
    sims = 4000
    caught = sum(not judge(between_runs(list(rng.normal(100, sd, k))),
                           between_runs(list(rng.normal(100 - mde, sd, k))),
                           Gate("floor")).passed for _ in range(sims))
    assert caught / sims == pytest.approx(0.9, abs=0.015)


@pytest.mark.parametrize(("p", "n", "points"), [(0.955, 1319, 3.35), (0.903, 198, 13.1),
                                                (0.834, 50, 32.2)])
def test_binomial_mde_is_the_drop_caught_90_percent_of_the_time(p: float, n: int,
                                                                 points: float) -> None:
    d = planned(binomial(p, n), Gate("floor"), n=n)
    assert d.mde is not None and d.mde * 100 == pytest.approx(points, abs=0.1)
    assert binomial_power(p, n, p - d.mde, n, Gate("floor")) == pytest.approx(0.9, abs=0.01)


def test_binomial_power_is_the_production_gates_fail_rate() -> None:
    rng = np.random.default_rng(3)
    p, n, drop, sims = 0.9, 300, 0.05, 4000
    xb, xn = rng.binomial(n, p, sims) / n, rng.binomial(n, p - drop, sims) / n
    seen = np.mean([not judge(binomial(b, n), binomial(m, n), Gate("floor")).passed
                    for b, m in zip(xb, xn, strict=True)])
    assert binomial_power(p, n, p - drop, n, Gate("floor")) == pytest.approx(seen, abs=0.02)


def test_items_needed_takes_the_variance_at_p_and_at_p_minus_the_drop() -> None:
    n = items_needed(0.955, 0.02, 0.01)
    assert n == pytest.approx(3377, abs=5)
    # 2,798 a side (the variance at p on both sides) gives 83%; the new count gives 90%
    assert binomial_power(0.955, 2798, 0.935, 2798, Gate("floor")) == pytest.approx(0.83, abs=0.01)
    assert n is not None
    assert binomial_power(0.955, n, 0.935, n, Gate("floor")) == pytest.approx(0.9, abs=0.01)
    assert items_needed(0.955, 0.02, 0.01, baseline_n=1319) is None


def test_band_spends_half_its_alpha_on_each_side() -> None:
    base, new = between_runs([10.0, 10.2, 9.8]), between_runs([10.0, 10.2, 9.8])
    from scipy.stats import t

    se = 0.2 * (2 / 3) ** 0.5
    assert margin(base, new, Gate("band")) == pytest.approx(t.ppf(1 - 0.005, 4) * se)
    assert margin(base, new, Gate("floor")) == pytest.approx(t.ppf(1 - 0.01, 4) * se)
    rng = np.random.default_rng(11)
    sims = 6000
    fails = sum(not judge(between_runs(list(rng.normal(10, 0.2, 3))),
                          between_runs(list(rng.normal(10, 0.2, 3))), Gate("band")).passed
                for _ in range(sims))
    assert fails / sims == pytest.approx(0.01, abs=0.004)
