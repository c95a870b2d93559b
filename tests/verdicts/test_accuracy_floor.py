"""Accuracy floors around a published score count that score's own sampling error; a
measured known-good run of this harness, when stored, is the reference instead (the
published score is then shown, not asserted); accuracy_min's n is one length's items."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_rocm_llm.config.checks import Check
from pytest_rocm_llm.correctness.result import EvalResult
from pytest_rocm_llm.verdicts.baselines import BaselineEntry
from pytest_rocm_llm.verdicts.gate import binomial
from pytest_rocm_llm.verdicts.judge import eval_measurement, eval_spec
from pytest_rocm_llm.verdicts.verdict import Verdict, decide

GSM8K = Check("gsm8k_accuracy", None, "accuracy", None, None, "published GSM8K 95.5",
              eval="gsm8k", reference_score=0.955)
BASE = Verdict(suite="glm52", target="mi355x", profile="reference", check="gsm8k_accuracy",
               feature="correctness", metric="accuracy", unit="", status="pass")


def entry(value: float, n: int, kind: str) -> BaselineEntry:
    return BaselineEntry("gsm8k_accuracy", {
        "metric": "accuracy", "unit": "", "direction": "higher", "value": value, "n": n,
        "spread": None, "spread_kind": "binomial", "gate": {"kind": "floor", "alpha": 0.01},
        "provenance": {"kind": kind, "date": "2026-07"}})


def as_good_as_published(ref: float, n: int, n_pub: int, sims: int = 40000) -> np.ndarray:
    """Scores of builds exactly as good as the published run: its true accuracy is the
    published score give or take that score's own sampling error."""
    rng = np.random.default_rng(52)
    true = np.clip(rng.normal(ref, (ref * (1 - ref) / n_pub) ** 0.5, size=sims), 0, 1)
    return rng.binomial(n, true) / n


@pytest.mark.parametrize("ref, n", [(0.955, 1319), (0.903, 198)], ids=["gsm8k", "gpqa"])
def test_a_build_as_good_as_the_published_run_fails_at_about_alpha(ref, n):
    """The exact binomial floor (0.9409 / 0.8535) treats the published score as the truth
    and fails such a build ~4.8% / ~6% of the time; counting the published n, ~1%."""
    check = Check("acc", None, "accuracy", None, None, "published", eval="gsm8k",
                  reference_score=ref)
    spec, notes = eval_spec(check, binomial(ref, n), entry(ref, n, "published"))
    assert notes == () and "counting the published score's own sampling error" in spec.source
    rate = float(np.mean(as_good_as_published(ref, n, n) < spec.min - 1e-12))
    assert 0.004 <= rate <= 0.016, (spec.min, rate)


def test_without_the_published_count_the_exact_floor_stays_and_says_so():
    spec, _ = eval_spec(GSM8K, binomial(0.95, 1319), None)
    assert spec.min == pytest.approx(0.9409, abs=1e-4)
    assert "its own sampling error is not counted" in spec.source


def test_a_measured_known_good_run_is_the_reference():
    """A stored measured run (0.95 over 1319) decides by the two-proportion gate; the
    published 95.5% is shown, not asserted (0.937 would fail its floor, passes here)."""
    stored = entry(0.95, 1319, "measured")
    spec, notes = eval_spec(GSM8K, binomial(0.937, 1319), stored)
    assert spec.min is None and spec.direction == "higher"
    assert notes and notes[0].startswith("published 0.955: reference, not asserted")
    ok = decide(spec, binomial(0.937, 1319), BASE, stored, "check", {"kind": "measured",
                "date": "2026-12-01"}, "b.json", notes=notes)
    assert ok.failure is None and ok.verdict.gated and notes[0] in ok.verdict.notes
    bad = decide(spec, binomial(0.925, 1319), BASE, stored, "check", {}, "b.json")
    assert bad.cause == "gate"


def test_accuracy_min_counts_one_lengths_items():
    records = [{"length": length, "ok": True, "correct": i % 2 == 0}
               for length in (512, 1024) for i in range(3)]
    result = EvalResult("long_context", "long_context", {"accuracy_min": 2 / 3}, records)
    check = Check("lc", None, "accuracy_min", 0.0, None, "s", eval="long_context")
    m = eval_measurement(check, result)
    assert (m.n, m.spread_kind) == (3, "binomial")
