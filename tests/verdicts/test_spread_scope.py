"""A stored gate's alpha holds only for the noise its baseline's spread carries (issue 23
item 2): trials run back to back in one session leave out the drift between sessions, so a
baseline records which it is (``spread_scope``) and the row says what alpha it can claim."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pytest_rocm_llm.config.checks import Gate
from pytest_rocm_llm.verdicts import baseline_model
from pytest_rocm_llm.verdicts.baselines import BaselineEntry, load
from pytest_rocm_llm.verdicts.gate import between_runs, judge
from pytest_rocm_llm.verdicts.verdict import CheckSpec, Verdict, baseline_entry, decide

ROOT = Path(__file__).resolve().parents[2]
SPEC = CheckSpec("speed", "output_speed_tok_s", "tok/s", None, None, "s", Gate("floor"))
PROV = {"kind": "measured", "date": "2026-12-01"}
BASE = Verdict(suite="s", target="cpu", profile="p", check="speed", feature="performance",
               metric="output_speed_tok_s", unit="tok/s", status="pass")


def stored(scope: str | None) -> BaselineEntry:
    d = {"metric": "output_speed_tok_s", "unit": "tok/s", "direction": "higher",
         "value": 100.0, "n": 50, "spread": 1.0, "spread_kind": "between_runs", "runs": 5,
         "gate": {"kind": "floor", "alpha": 0.01, "tolerance": 0.0}, "provenance": PROV}
    if scope is not None:
        d["spread_scope"] = scope
    baseline_model.Entry.model_validate(d)
    return BaselineEntry("speed", d)


def test_existing_files_still_load_and_read_as_one_sessions_spread() -> None:
    cpu = load(ROOT / "baselines" / "cpu" / "smoke.json")
    assert cpu is not None
    kinds = [e.measurement for e in cpu.entries.values()
             if e.measurement.spread_kind == "between_runs"]
    assert kinds and all(m.scope == "session" for m in kinds)
    assert stored(None).measurement.scope == "session"


def test_a_within_session_baseline_claims_alpha_within_a_session_only() -> None:
    new = between_runs([100.0, 101.0, 99.0, 100.5, 99.5])
    r = judge(stored(None).measurement, new, Gate("floor"))
    assert r.gated and r.alpha == 0.01 and r.alpha_scope == "session"
    assert "within one session" in r.describe() and "not across sessions" in r.describe()
    across = judge(stored("sessions").measurement, new, Gate("floor"))
    assert across.alpha_scope == "sessions" and "across sessions" in across.describe()
    d = decide(SPEC, new, BASE, stored(None), "check", PROV, "b.json")
    assert d.verdict.alpha_scope == "session" and "within one session" in d.verdict.gate


def test_a_recorded_baseline_states_its_scope() -> None:
    e = baseline_entry(SPEC, between_runs([1.0, 2.0, 3.0]), "p", PROV)
    assert e["spread_scope"] == "session"
    baseline_model.Entry.model_validate(e)
    # what the back-to-back scope warns of, measured: 1% trial CV, 2% drift between sessions
    rng = np.random.default_rng(1)

    def session() -> list[float]:
        level = 100 * (1 + rng.normal(0, 0.02))
        return list(level * (1 + rng.normal(0, 0.01, 5)))

    fails = np.mean([not judge(between_runs(session()), between_runs(session()),
                               Gate("floor")).passed for _ in range(1500)])
    assert fails > 0.1  # far above the 1% alpha a within-session spread can claim
    assert json.dumps(e)
