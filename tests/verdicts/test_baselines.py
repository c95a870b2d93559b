"""Baseline files: validated against the schema, rejected with the file and field named when
broken (and never overwritten then), written atomically, merged with a diff."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.verdicts import baselines
from pytest_rocm_llm.verdicts.baselines import apply_updates, load, write_atomic


def entry(value: float, kind: str = "measured", tolerance: float = 0.0) -> dict:
    return {"metric": "output_tok_s", "unit": "tok/s", "direction": "higher", "value": value,
            "n": 8, "spread": 1.5, "spread_kind": "stderr", "profile": "default",
            "gate": {"kind": "floor", "alpha": 0.01, "tolerance": tolerance},
            "provenance": {"kind": kind, "date": "2026-11-29", "engine": "sglang",
                           "engine_version": "0.5.23", "host": "h"}}


def doc(**metrics: dict) -> dict:
    return {"schema_version": 1, "suite": "smoke", "target": "cpu", "metrics": metrics}


def test_round_trip(tmp_path: Path):
    path = tmp_path / "cpu" / "smoke.json"
    write_atomic(path, doc(tput=entry(10.0)))
    b = load(path)
    assert b is not None and b.entries["tput"].measurement.value == 10.0
    assert b.entries["tput"].gate.kind == "floor"
    assert load(tmp_path / "cpu" / "missing.json") is None


@pytest.mark.parametrize("text, field", [
    ('{"schema_version": 1, "suite": "smoke", "target": "cpu", "metrics": {', "not valid JSON"),
    (json.dumps(doc(tput={**entry(1.0), "value": "fast"})), "metrics.tput.value"),
    (json.dumps({**doc(), "schema_version": 2}), "schema_version"),
    (json.dumps(doc(tput={**entry(1.0), "direction": "up"})), "metrics.tput.direction"),
    (json.dumps(doc(tput={k: v for k, v in entry(1.0).items() if k != "provenance"})),
     "provenance"),
    (json.dumps({**doc(), "extra": 1}), "(top level)"),
    # A between-run spread without its count cannot be weighed.
    (json.dumps(doc(tput={**entry(1.0), "spread_kind": "between_runs"})),
     "metrics.tput: 'runs' is a required property"),
    (json.dumps(doc(tput={**entry(1.0), "spread_kind": "between_runs", "runs": 0})),
     "metrics.tput.runs"),
])
def test_broken_file_is_a_usage_error_naming_file_and_field(tmp_path: Path, text, field):
    path = tmp_path / "smoke.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(path) in str(info.value) and field in str(info.value)
    # ... and an update does not replace it.
    with pytest.raises(ConfigError):
        apply_updates(path, "smoke", "cpu", {"tput": entry(2.0)})
    assert path.read_text() == text


def test_atomic_write_survives_a_crash_mid_write(tmp_path: Path, monkeypatch):
    path = tmp_path / "smoke.json"
    write_atomic(path, doc(tput=entry(10.0)))
    before = path.read_bytes()

    def crash(src, dst):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated"):
        write_atomic(path, doc(tput=entry(99.0)))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["smoke.json"]  # no temp file left


def test_atomic_write_crash_while_writing(tmp_path: Path, monkeypatch):
    path = tmp_path / "smoke.json"
    write_atomic(path, doc(tput=entry(10.0)))
    before = path.read_bytes()
    real_fsync = os.fsync

    def crash(fd):
        raise KeyboardInterrupt  # Ctrl-C half-way through

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, doc(tput=entry(99.0)))
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert path.read_bytes() == before and load(path) is not None
    assert len(list(tmp_path.iterdir())) == 1


def test_updates_merge_and_report_changes(tmp_path: Path):
    path = tmp_path / "cpu" / "smoke.json"
    changes = apply_updates(path, "smoke", "cpu", {"tput": entry(10.0, "published", 0.3)})
    assert [c.old for c in changes] == [None] and "new baseline" in changes[0].describe()
    changes = apply_updates(path, "smoke", "cpu", {"tput": entry(12.0), "ttft": entry(1.0)})
    by = {c.check: c for c in changes}
    assert by["tput"].old == 10.0 and by["tput"].new == 12.0
    assert "+20.0%" in by["tput"].describe() and "was published" in by["tput"].describe()
    data = json.loads(path.read_text())
    assert data["metrics"]["tput"]["value"] == 12.0 and data["metrics"]["ttft"]["value"] == 1.0
    assert set(data["metrics"]) == {"tput", "ttft"}


def test_schema_file_is_packaged():
    assert baselines.schema()["properties"]["schema_version"]["const"] == 1


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[2] / "baselines")
                                        .glob("*/*.json")),
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_stored_baselines_match_their_suites(path: Path):
    """Every stored baseline validates, and names checks (and their metrics) that its suite
    declares; reference rows point at real checks too."""
    from pytest_rocm_llm.config.suite import load_suite
    from pytest_rocm_llm.config.targets import TARGETS

    b = load(path)
    assert b is not None and b.suite == path.stem and b.target == path.parent.name
    suite = load_suite(Path(__file__).parents[2] / "suites" / b.suite / "suite.toml")
    checks = {c.name: c for c in suite.checks_for(TARGETS[b.target])}
    for name, e in b.entries.items():
        assert name in checks, f"{path}: {name} is not a check of {b.suite}"
        assert e.data["metric"] == checks[name].metric
        assert e.data["direction"] == checks[name].direction
    for row in b.reference_rows:
        assert row["check"] in checks


def test_a_pending_check_leaves_pending_when_measured(tmp_path: Path):
    path = tmp_path / "cpu" / "smoke.json"
    write_atomic(path, {**doc(), "pending": {"tput": {"reason": "no published figure"}}})
    b = load(path)
    assert b is not None and b.pending == {"tput": "no published figure"}
    apply_updates(path, "smoke", "cpu", {"tput": entry(10.0)})
    data = json.loads(path.read_text())
    assert "pending" not in data and data["metrics"]["tput"]["value"] == 10.0


def test_a_check_cannot_be_both_pending_and_measured(tmp_path: Path):
    path = tmp_path / "cpu" / "smoke.json"
    path.parent.mkdir()
    path.write_text(json.dumps({**doc(tput=entry(1.0)), "pending": {"tput": {"reason": "x"}}}))
    with pytest.raises(ConfigError, match=r"smoke.json: .*tput stored both as a value"):
        load(path)


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[2] / "baselines")
                                        .glob("*/*.json")),
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_gated_check_has_a_stored_entry(path: Path):
    """An unchanged build's first run on a target with a stored file is not red by
    construction: each gated check has a value or a stated "none until measured" reason."""
    from pytest_rocm_llm.config.suite import load_suite
    from pytest_rocm_llm.config.targets import TARGETS

    b = load(path)
    assert b is not None
    suite = load_suite(Path(__file__).parents[2] / "suites" / b.suite / "suite.toml")
    missing = [c.name for c in suite.checks_for(TARGETS[b.target])
               if c.gate is not None and c.name not in b.entries and c.name not in b.pending]
    assert not missing, f"{path}: gated checks with no entry and no pending reason: {missing}"
    for name in b.pending:
        assert name in {c.name for c in suite.checks_for(TARGETS[b.target])}, name
