"""The pydantic model of baseline files: it accepts every stored baseline, rejects what the
JSON Schema rejects with the file and field named, and drops into baselines.load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.verdicts import baseline_model, baselines

STORED = sorted(Path(__file__).resolve().parents[2].joinpath("baselines").glob("*/*.json"))


def entry(value: float = 1.0) -> dict:
    return {"metric": "output_tok_s", "unit": "tok/s", "direction": "higher", "value": value,
            "n": 8, "spread": 1.5, "spread_kind": "stderr", "profile": "default",
            "gate": {"kind": "floor", "alpha": 0.01, "tolerance": 0.0},
            "provenance": {"kind": "measured", "date": "2026-11-29", "engine": "sglang",
                           "engine_version": "0.5.23", "host": "h"}}


def doc(**metrics: dict) -> dict:
    return {"schema_version": 1, "suite": "smoke", "target": "cpu", "metrics": metrics}


def test_every_stored_baseline_is_valid() -> None:
    assert STORED, "no baselines/*/*.json found"
    for path in STORED:
        data = json.loads(path.read_text())
        parsed = baseline_model.validate(path, data)
        assert set(parsed.metrics) == set(data["metrics"])


BROKEN = [
    (doc(tput={**entry(), "value": "fast"}), "baseline field metrics.tput.value"),
    ({**doc(), "schema_version": 2}, "baseline field schema_version"),
    (doc(tput={**entry(), "direction": "up"}), "baseline field metrics.tput.direction"),
    (doc(tput={k: v for k, v in entry().items() if k != "provenance"}),
     "baseline field metrics.tput: 'provenance' is a required property"),
    ({**doc(), "extra": 1}, "baseline field (top level): Additional properties are not allowed "
                            "('extra' was unexpected)"),
    (doc(tput={**entry(), "spread_kind": "between_runs"}),
     "metrics.tput: 'runs' is a required property"),
    (doc(tput={**entry(), "spread_kind": "between_runs", "runs": 0}), "metrics.tput.runs"),
    (doc(tput={**entry(), "n": True}), "metrics.tput.n"),
    (doc(tput={**entry(), "gate": {"kind": "floor", "alpha": 0.5}}), "metrics.tput.gate.alpha"),
    (doc(tput={**entry(), "provenance": {**entry()["provenance"], "kernel_paths": {
        "moe_kernels": "ck"}}}), "metrics.tput.provenance.kernel_paths.moe_kernels"),
    ({**doc(), "reference_rows": [{"hardware": "b200", "check": "c", "value": 1.0,
                                   "unit": "x"}]},
     "baseline field reference_rows.0: 'source' is a required property"),
]


@pytest.mark.parametrize("data, words", BROKEN)
def test_a_broken_file_names_file_and_field(data: dict, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        baseline_model.validate(Path("b/cpu/smoke.json"), data)
    message = str(info.value)
    assert message.startswith("b/cpu/smoke.json: ") and words in message, message
    assert "not overwritten while broken" in message


def test_it_drops_into_baselines_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baselines, "validate", baseline_model.validate)
    path = tmp_path / "cpu" / "smoke.json"
    baselines.write_atomic(path, doc(tput=entry(10.0)))
    loaded = baselines.load(path)
    assert loaded is not None and loaded.entries["tput"].measurement.value == 10.0
    path.write_text(json.dumps(doc(tput={**entry(), "value": "fast"})))
    with pytest.raises(ConfigError, match="metrics.tput.value"):
        baselines.load(path)


def test_the_generated_json_schema_pins_the_version() -> None:
    schema = baseline_model.json_schema()
    assert schema["properties"]["schema_version"]["const"] == 1
    assert "metrics" in schema["required"]
