"""Decisions: the absolute floor and the baseline gate both count; the update flags write
and fail (update) or write and pass (regen); a missing baseline is written and fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_rocm_llm.config.checks import Gate
from pytest_rocm_llm.report.collector import RunCollector
from pytest_rocm_llm.report.run_report import RunReport
from pytest_rocm_llm.report.table import render
from pytest_rocm_llm.verdicts.baselines import BaselineEntry
from pytest_rocm_llm.verdicts.gate import Measurement
from pytest_rocm_llm.verdicts.verdict import CheckSpec, Verdict, decide

SPEC = CheckSpec("tput", "output_tok_s", "tok/s", 100.0, None, "published, 2026-07",
                 Gate("floor"))
BASE = Verdict(suite="glm52", target="mi355x", profile="throughput", check="tput",
               feature="performance", metric="output_tok_s", unit="tok/s", status="pass")
PROV = {"kind": "measured", "date": "2026-11-29"}


def stored(value: float, spread: float | None = None, kind: str = "measured") -> BaselineEntry:
    """A stored value; with ``spread``, the SD between the 3 runs it is the mean of."""
    return BaselineEntry("tput", {
        "metric": "output_tok_s", "unit": "tok/s", "direction": "higher", "value": value,
        "n": 8, "spread": spread, "gate": {"kind": "floor", "alpha": 0.01},
        "spread_kind": "between_runs", "runs": 3,
        "provenance": {"kind": kind, "date": "2026-07-01"}})


def run(value: float, entry: BaselineEntry | None, mode: str = "check", spread=None):
    return decide(SPEC, Measurement(value, 8, spread), BASE, entry, mode, PROV, "b.json",
                  [{"hardware": "B200", "check": "tput", "value": 200.0, "unit": "tok/s",
                    "source": "published"}])


def test_pass_needs_floor_and_baseline():
    d = run(150.0, stored(140.0))
    assert d.failure is None and d.verdict.status == "pass" and d.write is None
    assert d.verdict.references and "ratio 0.75" in d.verdict.references[0]


def test_floor_miss_fails_even_when_the_baseline_is_lower():
    d = run(90.0, stored(80.0))
    assert d.cause == "floor" and "short by 10.0%" in d.failure


def test_baseline_regression_beyond_noise_fails_with_the_delta():
    d = run(120.0, stored(150.0, spread=1.0), spread=1.0)
    assert d.cause == "gate" and "-20.0%" in d.failure and d.verdict.status == "fail"
    # One new run against 3 stored ones, SD 1 on 2 df: margin t(0.99, 2) * sqrt(4/3) = 8.04.
    assert "margin 8.04 tok/s, alpha 0.01" in d.failure
    assert (d.verdict.gated, d.verdict.alpha) == (True, 0.01)
    # exact noncentral t at df 2: 10.736 SE (t + t said 6.9646 + 1.8856)
    assert d.verdict.mde_pct == pytest.approx(10.7365 * (4 / 3) ** 0.5 / 1.5,
                                              rel=1e-3)
    assert run(148.0, stored(150.0, spread=1.0), spread=1.0).failure is None  # within noise


def test_a_check_without_between_run_noise_is_reported_with_no_alpha():
    d = run(120.0, stored(150.0), spread=1.0)  # a 20% drop, but no run-to-run noise known
    assert d.failure is None and d.verdict.status == "pass" and d.verdict.gated is False
    assert d.verdict.alpha is None and d.verdict.mde_pct is None
    assert d.verdict.gate.startswith("reported, not gated") and "alpha" not in d.verdict.gate
    assert d.verdict.delta_pct == pytest.approx(-20.0)


def test_an_accuracy_baseline_keeps_its_binomial_noise_even_when_stored_as_stderr():
    """A proportion's noise follows from n (files before the binomial kind said "stderr")."""
    entry = BaselineEntry("acc", {
        "metric": "accuracy", "unit": "", "direction": "higher", "value": 0.955, "n": 1319,
        "spread": 0.0057, "spread_kind": "stderr", "gate": {"kind": "floor", "alpha": 0.01},
        "provenance": {"kind": "published", "date": "2026-07"}})
    spec = CheckSpec("acc", "accuracy", "", 0.0, None, "published", Gate("floor"))
    from pytest_rocm_llm.verdicts.gate import binomial

    ok = decide(spec, binomial(0.945, 1319), BASE, entry, "check", PROV, "b.json")
    bad = decide(spec, binomial(0.925, 1319), BASE, entry, "check", PROV, "b.json")
    assert ok.failure is None and ok.verdict.gated and ok.verdict.alpha == 0.01
    assert bad.cause == "gate" and "binomial noise over n=1319 and n=1319" in bad.failure


def test_missing_baseline_is_written_and_fails():
    d = run(150.0, None)
    assert d.write is not None and d.write["value"] == 150.0 and d.cause == "baseline"
    assert "no baseline yet" in d.failure and d.verdict.status == "new"


@pytest.mark.parametrize("mode, fails", [("update", True), ("regen", False)])
def test_update_flags_write(mode, fails):
    d = run(150.0, stored(140.0, kind="published"), mode=mode)
    assert d.write is not None and d.write["provenance"] == PROV
    assert (d.failure is not None) == fails and d.verdict.status == "updated"


def test_no_gate_means_floor_only():
    spec = CheckSpec("x", "m", "", 1.0, None, "s", None)
    d = decide(spec, Measurement(2.0), BASE, None, "check", PROV, "b.json")
    assert d.failure is None and d.write is None


def test_collector_round_trips_worker_output(tmp_path: Path):
    worker = RunCollector()
    entry = run(150.0, None).write
    worker.queue(tmp_path / "cpu" / "smoke.json", "smoke", "cpu", "tput", entry)
    controller = RunCollector()
    controller.merge_workeroutput(worker.to_workeroutput())
    changes = controller.flush()
    assert [c.check for c in changes] == ["tput"]
    assert json.loads((tmp_path / "cpu" / "smoke.json").read_text())["metrics"]["tput"]


def test_summary_table_and_results_document():
    v = run(120.0, stored(150.0, spread=1.0), spread=1.0).verdict
    lines = render([v, run(150.0, stored(140.0)).verdict])
    assert lines[0] == "glm52 [mi355x] profile throughput"
    assert "check" in lines[1] and "verdict" in lines[1]
    assert any("FAIL" in line and "-20.0%" in line for line in lines)
    doc = RunReport("mi355x", "compare", "baselines", None, "/r", (v,)).to_json()
    assert doc["format_version"] == 2 and doc["run"]["target"] == "mi355x"
    assert doc["counts"] == {"fail": 1} and doc["verdicts"][0]["measured"] == 120.0
    assert "paired" not in doc  # a paired run's part only in a paired run
    assert Verdict.from_json(json.loads(json.dumps(v.to_json()))) == v


def test_secrets_are_masked_in_argv_and_environment():
    from pytest_rocm_llm.plugin.judging import redact_argv, redact_env

    argv = ["python", "-m", "sglang.launch_server", "--api-key", "sk-1", "--port", "1",
            "--admin-api-key=sk-2", "--hf-token", "t"]
    shown = " ".join(redact_argv(argv))
    assert "sk-1" not in shown and "sk-2" not in shown and " t" not in shown.replace("--", "")
    assert "--port 1" in shown and "--api-key ***" in shown and "--admin-api-key=***" in shown
    assert redact_env({"HF_TOKEN": "x", "AWS_SECRET_ACCESS_KEY": "y", "OMP": "2"}) == \
        {"HF_TOKEN": "***", "AWS_SECRET_ACCESS_KEY": "***", "OMP": "2"}


def test_none_until_measured_is_reported_not_gated_and_not_written():
    d = decide(SPEC, Measurement(150.0, 8, None), BASE, None, "check", PROV, "b.json",
               pending="no published figure for this ratio")
    assert d.failure is None and d.write is None
    v = d.verdict
    assert (v.status, v.gated, v.measured, v.gate) == ("pass", False, 150.0,
                                                       "none until measured")
    assert any("none until measured (no published figure for this ratio)" in n
               for n in v.notes)
    # the floor still decides
    miss = decide(SPEC, Measurement(90.0, 8, None), BASE, None, "check", PROV, "b.json",
                  pending="x")
    assert miss.cause == "floor"
    # asked to record: written, as any new baseline
    up = decide(SPEC, Measurement(150.0, 8, None), BASE, None, "regen", PROV, "b.json",
                pending="x")
    assert up.write is not None and up.write["value"] == 150.0
