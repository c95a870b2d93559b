"""The baseline gate at its boundaries: a value exactly on a threshold passes, Student's t
gives way to z only past 10^6 degrees of freedom, a within-run spread on the new side adds
no noise (and counts as one run), a baseline without run-to-run noise still reports its
delta, and a verdict's artifacts survive the trip to JSON."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import pytest

from pytest_rocm_llm.config.checks import Gate, GateKind
from pytest_rocm_llm.verdicts.gate import (
    Measurement,
    between_runs,
    binomial,
    judge,
    noise,
    quantile,
)
from pytest_rocm_llm.verdicts.verdict import Verdict

# A baseline with run-to-run noise (mean 11, SD 1 over 3 runs); the new value has only a
# within-run spread, so the margin depends on the baseline alone.
BASELINE = between_runs([10.0, 11.0, 12.0])


def within(value: float) -> Measurement:
    return Measurement(value, n=20, spread=0.3, spread_kind="stderr")


@pytest.mark.parametrize("kind", ["floor", "band"])
def test_a_value_exactly_on_the_lower_threshold_passes(kind: GateKind) -> None:
    low = judge(BASELINE, within(0.0), Gate(kind)).threshold_low
    assert low is not None and low < BASELINE.value
    r = judge(BASELINE, within(low), Gate(kind))
    assert r.passed and r.gated and r.threshold_low == low
    assert not judge(BASELINE, within(math.nextafter(low, -math.inf)), Gate(kind)).passed


@pytest.mark.parametrize("kind", ["ceiling", "band"])
def test_a_value_exactly_on_the_upper_threshold_passes(kind: GateKind) -> None:
    high = judge(BASELINE, within(0.0), Gate(kind)).threshold_high
    assert high is not None and high > BASELINE.value
    r = judge(BASELINE, within(high), Gate(kind))
    assert r.passed and r.gated and r.threshold_high == high
    assert not judge(BASELINE, within(math.nextafter(high, math.inf)), Gate(kind)).passed


def test_students_t_holds_up_to_a_million_degrees_of_freedom_then_z() -> None:
    z = NormalDist().inv_cdf(0.99)
    # Student's t quantile to first order in 1/df (Cornish-Fisher): z + (z^3 + z) / (4 df);
    # at 10^6 df the next term is ~1e-12, and the t correction itself ~3.7e-6
    t_million = z + (z ** 3 + z) / (4 * 1e6)
    assert quantile(0.99, 1e6) == pytest.approx(t_million, abs=1e-9)
    assert quantile(0.99, 1e6) - z > 1e-6
    assert quantile(0.99, 1_000_001.0) == z
    assert quantile(0.99, None) == z


def test_a_binomial_baseline_ignores_a_within_run_spread_on_the_new_side() -> None:
    base = binomial(0.8, 100)  # SE 0.04
    nz = noise(base, Measurement(0.78, n=100, spread=0.5, spread_kind="stderr"))
    assert nz is not None and nz.df is None
    assert nz.se_diff == pytest.approx(0.04, rel=1e-12)
    # a binomial new side adds its own: sqrt(0.04^2 + 0.04^2)
    both = noise(base, binomial(0.8, 100))
    assert both is not None and both.se_diff == pytest.approx(0.04 * math.sqrt(2), rel=1e-12)


def test_a_new_value_without_between_run_spread_counts_as_one_run() -> None:
    """Even when it says it is the mean of several runs: its spread is within one run, so
    its runs carry no between-run estimate and the difference's SE uses 1/1."""
    measured = Measurement(11.5, n=20, spread=0.3, spread_kind="stderr", runs=4)
    nz = noise(BASELINE, measured)
    assert nz is not None
    assert nz.se_diff == pytest.approx(1.0 * math.sqrt(1 / 3 + 1 / 1), rel=1e-12)
    assert nz.df == 2.0 and nz.basis == "between-run SD 1 over 3 + 1 runs"


def test_a_baseline_without_run_to_run_noise_still_reports_its_delta() -> None:
    base = Measurement(200.0, n=10, spread=4.0, spread_kind="stderr")
    r = judge(base, Measurement(190.0), Gate("floor"))
    assert (r.passed, r.gated, r.margin, r.threshold_low, r.alpha) == (
        True, False, None, None, None)
    assert r.delta == -10.0 and r.delta_pct == pytest.approx(-5.0, rel=1e-12)
    assert r.describe().startswith("reported, not gated: the baseline's spread is within one "
                                   "run (stderr)")


def test_a_verdicts_artifacts_round_trip_through_json() -> None:
    v = Verdict("s", "mi300x", "default", "throughput", "performance", "output_tok_s",
                "tok/s", "pass", measured=213.0,
                artifacts={"records_csv": "results/throughput.csv", "trace": "t.json"},
                references=("h100: 0.9x",), notes=("kernel path changed",))
    d = v.to_json()
    assert d["artifacts"] == {"records_csv": "results/throughput.csv", "trace": "t.json"}
    assert Verdict.from_json(json.loads(json.dumps(d))) == v
