"""The calibration benchmark re-measures every stated "detects" figure through the
production gate and fails when one is more than 2 points of power off (issue 23): the
binomial and stored-gate figures must be caught 90% of the time."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pytest_rocm_llm.config.checks import Check

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_calibration",
                                                  ROOT / "benchmarks" / "bench_calibration.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_calibration"] = module
    spec.loader.exec_module(module)
    return module


def accuracy_check() -> Check:
    return Check("acc", None, "accuracy", None, None, "s", eval="gsm8k", reference_score=0.955)


@pytest.mark.parametrize(("p", "n"), [(0.955, 1319), (0.834, 50)])
def test_a_binomial_gates_stated_mde_is_caught_90_percent_of_the_time(bench, p: float,
                                                                      n: int) -> None:
    row = bench.binomial_row(SimpleNamespace(name="t"), accuracy_check(), p, n, n, "published",
                             200, np.random.default_rng(1))
    assert row.at_mde is not None and abs(row.at_mde - 0.9) <= 0.02, (row.mde, row.at_mde)
    assert bench.off_figures([row]) == []


def test_a_figure_off_by_more_than_two_points_fails_the_run(bench) -> None:
    row = bench.Row("s", "c", "n=1", "noise", 0.01, 0.5, "3 pt", "x", at_mde=0.875)
    assert bench.off_figures([row]) == [row]
    assert bench.off_figures([bench.Row("s", "c", "n", "z", 0.0, 0.5, "-", "x", None)]) == []
