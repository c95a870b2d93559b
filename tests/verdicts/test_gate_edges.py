"""The baseline gate at its edges: the ceiling and band thresholds sit exactly one margin
from the baseline, tolerance scales with |baseline|, the sample SD and standard error are
the textbook ones, and the row text says what the gate is (or why there is none)."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm, t

from pytest_rocm_llm.config.checks import Gate, gate_kind_for
from pytest_rocm_llm.verdicts.gate import (
    Measurement,
    between_runs,
    binomial,
    binomial_stderr,
    judge,
    sample_sd,
    stderr_of_mean,
)


def test_direction_maps_to_gate_kind() -> None:
    assert (gate_kind_for("higher"), gate_kind_for("lower")) == ("floor", "ceiling")


def test_sample_sd_and_stderr_of_the_mean_are_the_textbook_ones() -> None:
    # 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations sum to 32, n - 1 = 7
    values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    assert sample_sd(values) == pytest.approx(math.sqrt(32 / 7), rel=1e-12)
    assert stderr_of_mean(values) == pytest.approx(math.sqrt(32 / 7) / math.sqrt(8), rel=1e-12)
    assert sample_sd([3.0, 5.0]) == pytest.approx(math.sqrt(2.0), rel=1e-12)
    assert sample_sd([1.0]) is None and stderr_of_mean([1.0]) is None and sample_sd([]) is None


def test_between_runs_is_the_mean_with_the_sample_sd() -> None:
    m = between_runs([10.0, 12.0, 14.0], n=50)
    assert (m.value, m.n, m.spread, m.spread_kind, m.runs) == (12.0, 50, 2.0, "between_runs",
                                                               3)
    assert m.between_runs
    assert between_runs([10.0], n=0).n == 1 and not between_runs([10.0]).between_runs
    assert between_runs([10.0, 12.0]).n == 1  # items behind it unknown: one


def test_binomial_noise() -> None:
    assert binomial_stderr(0.9, 100) == pytest.approx(0.03, rel=1e-12)
    assert binomial_stderr(0.5, 0) is None and binomial_stderr(0.5, -1) is None
    assert binomial_stderr(0.5, 1) == 0.5  # one item still has noise
    assert binomial_stderr(1.0, 10) == 0.0 and binomial_stderr(1.2, 10) == 0.0
    m = binomial(0.9, 100)
    assert (m.value, m.n, m.spread, m.spread_kind) == (0.9, 100, pytest.approx(0.03),
                                                       "binomial")
    assert binomial(0.5, 0).n == 1


def three_runs(value: float, sd: float = 1.0) -> Measurement:
    return Measurement(value, 8, sd, "between_runs", 3)


def test_a_ceiling_sits_one_margin_above_the_baseline_and_fails_beyond_it() -> None:
    # 3 + 3 runs, SD 1: t(0.99, 4) * sqrt(2/3)
    m = t.ppf(0.99, 4) * math.sqrt(2 / 3)
    r = judge(three_runs(2.0), three_runs(2.0), Gate("ceiling"))
    assert r.threshold_low is None and r.threshold_high == pytest.approx(2.0 + m, rel=1e-9)
    assert r.margin == pytest.approx(m, rel=1e-9)
    assert judge(three_runs(2.0), three_runs(2.0 + 0.99 * m), Gate("ceiling")).passed
    assert not judge(three_runs(2.0), three_runs(2.0 + 1.01 * m), Gate("ceiling")).passed


def test_a_band_holds_both_sides() -> None:
    # alpha/2 per side (issue 23 item 3): the two sides together fail alpha of identical builds
    m = t.ppf(0.995, 4) * math.sqrt(2 / 3)
    r = judge(three_runs(10.0), three_runs(10.0), Gate("band"))
    assert (r.threshold_low, r.threshold_high) == (pytest.approx(10 - m), pytest.approx(10 + m))
    assert not judge(three_runs(10.0), three_runs(10 + 1.01 * m), Gate("band")).passed
    assert not judge(three_runs(10.0), three_runs(10 - 1.01 * m), Gate("band")).passed


def test_tolerance_scales_with_the_size_of_the_baseline_whatever_its_sign() -> None:
    m = t.ppf(0.99, 4) * math.sqrt(2 / 3)
    for base in (-200.0, 200.0):
        r = judge(three_runs(base), three_runs(base), Gate("floor", tolerance=0.05))
        assert r.margin == pytest.approx(m + 10.0, rel=1e-9)


def test_the_detectable_regression_is_the_noncentral_t_root() -> None:
    # issue 23 item 1: exact noncentral t, 5.640 SE at df 4 (t + t said 5.280)
    from scipy.stats import nct

    se = math.sqrt(2 / 3)
    r = judge(three_runs(100.0), three_runs(100.0), Gate("floor"))
    assert r.mde is not None and r.mde == pytest.approx(5.6401 * se, rel=1e-4)
    assert nct.sf(t.ppf(0.99, 4), 4, r.mde / se) == pytest.approx(0.9, abs=1e-6)
    assert r.mde_pct == pytest.approx(r.mde, rel=1e-9)  # baseline 100: absolute = percent


def test_a_zero_baseline_has_no_relative_figures() -> None:
    r = judge(three_runs(0.0), three_runs(1.0), Gate("floor"))
    assert r.delta == 1.0 and r.delta_pct is None and r.mde_pct is None and r.gated


def test_binomial_gates_use_z_over_both_sides() -> None:
    base, new = binomial(0.9, 100), binomial(0.8, 400)
    se = math.sqrt(0.09 / 100 + 0.16 / 400)
    r = judge(base, new, Gate("floor"))
    assert r.margin == pytest.approx(norm.ppf(0.99) * se, rel=1e-9)
    # a new value without binomial noise adds none
    r1 = judge(base, Measurement(0.9, 100), Gate("floor"))
    assert r1.margin == pytest.approx(norm.ppf(0.99) * 0.03, rel=1e-9)


def test_pooled_spread_weights_each_side_by_its_degrees_of_freedom() -> None:
    base = Measurement(100.0, 8, 1.0, "between_runs", 3)   # 2 df, SD 1
    new = Measurement(100.0, 8, 2.0, "between_runs", 5)    # 4 df, SD 2
    sd = math.sqrt((2 * 1.0 + 4 * 4.0) / 6)
    r = judge(base, new, Gate("floor"))
    assert r.margin == pytest.approx(t.ppf(0.99, 6) * sd * math.sqrt(1 / 3 + 1 / 5), rel=1e-9)


def test_row_text_of_a_gate_and_of_a_report_only_comparison() -> None:
    r = judge(three_runs(2.0), three_runs(2.0), Gate("band"))
    text = r.describe("s")
    lo, hi = f"{r.threshold_low:.4g}", f"{r.threshold_high:.4g}"
    assert text.startswith(f">= {lo} s and <= {hi} s (margin {r.margin:.3g} s, alpha 0.01, ")
    assert text.endswith(f"; detects {r.mde_pct:.1f}% at 90% power)")
    assert r.describe().startswith(f">= {lo} and <= {hi} (margin {r.margin:.3g}, alpha")
    ceiling = judge(three_runs(2.0), three_runs(2.0), Gate("ceiling"))
    assert ceiling.describe("s").startswith(f"<= {ceiling.threshold_high:.4g} s (margin")
    no = judge(Measurement(2.0, 8, 0.1, "stderr"), three_runs(2.0), Gate("floor"))
    assert not no.gated and no.alpha is None and no.passed
    assert no.describe("s") == ("reported, not gated: the baseline's spread is within one "
                                "run (stderr), not between runs (record it with trials >= 2)")
    one = judge(Measurement(2.0, 8, 0.1, "between_runs", 1), three_runs(2.0), Gate("floor"))
    assert one.basis == ("the baseline's between-run spread comes from 1 run(s); record it "
                         "with trials >= 2")
    none = judge(Measurement(2.0), three_runs(2.0), Gate("floor"))
    assert none.basis == ("the baseline carries no between-run spread (record it with "
                          "trials >= 2)")
