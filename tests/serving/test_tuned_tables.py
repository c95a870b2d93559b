"""AITER_CONFIG_FMOE located before any launch (a missing table is a usage error naming the
variable and the fix, in the run and as a plan blocker) and recorded by sha256 in a measured
entry's provenance, read where the engine runs (its command prefix)."""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from pathlib import Path

import pytest

from pytest_rocm_llm.config.suite import load_suite
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.plugin.preflight import preflight
from pytest_rocm_llm.serving.tuned_tables import table_problem, tuned_tables
from pytest_rocm_llm.verdicts.baselines import BaselineCache, validate
from pytest_rocm_llm.verdicts.provenance import collect
from tests.report.test_plan import GLM52, MI355X, settings

CSV = "token,model_dim,inter_dim,expert,topk,kernelName1\n16,6144,512,256,8,fmoe_fp4\n"


def test_a_missing_table_stops_the_run_before_launch(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "glm52_fp4_tuned_fmoe.csv"
    monkeypatch.setenv("AITER_CONFIG_FMOE", str(missing))
    suite = load_suite(GLM52)
    s = settings(allow_unjudged=True, baselines_dir=tmp_path)
    with pytest.raises(ConfigError) as e:
        preflight([suite], [], MI355X, s, BaselineCache(tmp_path))
    text = str(e.value)
    assert f"AITER_CONFIG_FMOE={missing}: {missing} is not a readable file" in text
    assert "Fix: export AITER_CONFIG_FMOE=<your tuned CSV>" in text
    assert text.startswith("suite glm52, profile ")
    missing.write_text(CSV)  # the same run with the file there: nothing to say
    assert preflight([suite], [], MI355X, s, BaselineCache(tmp_path)) == []
    # an attached server was launched elsewhere: not ours to check
    monkeypatch.setenv("AITER_CONFIG_FMOE", str(tmp_path / "gone.csv"))
    assert preflight([suite], [], MI355X, dataclasses.replace(s, endpoint="http://h:1"),
                     BaselineCache(tmp_path)) == []


def test_merged_tables_are_each_checked_and_hashed_where_the_engine_runs(
        tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text(CSV)
    env = {"AITER_CONFIG_FMOE": f"{a}:{b}"}
    assert f"{b} is not a readable file in the engine's environment" in (
        table_problem(env, (sys.executable,), " in the engine's environment") or "")
    b.write_text(CSV + "32,6144,512,256,8,fmoe_fp4\n")
    want = {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in (a, b)}
    assert tuned_tables(env) == {"AITER_CONFIG_FMOE": want}
    # through a command prefix (here: another interpreter), as inside a container
    assert tuned_tables(env, (sys.executable,)) == {"AITER_CONFIG_FMOE": want}
    assert table_problem(env) is None and table_problem({}) is None


def test_provenance_records_the_table_and_the_schema_takes_it(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text(CSV)
    prov = collect(engine="sglang", engine_version="0.5.23", profile_argv=[], model="m",
                   launch_argv=["sglang-serve"], suite_dir=tmp_path, container_image=None,
                   local=True, env={"AITER_CONFIG_FMOE": str(table), "HOME": "/root"})
    assert prov["tuned_tables"] == {
        "AITER_CONFIG_FMOE": {str(table): hashlib.sha256(CSV.encode()).hexdigest()}}
    entry = {"metric": "output_tok_s", "unit": "tok/s", "direction": "higher", "value": 1.0,
             "n": 1, "spread": None, "gate": {"kind": "floor"}, "provenance": prov}
    validate(tmp_path / "b.json", {"schema_version": 1, "suite": "s", "target": "mi355x",
                                   "metrics": {"c": entry}})
    unset = collect(engine="sglang", engine_version="0.5.23", profile_argv=[], model="m",
                    launch_argv=["sglang-serve"], suite_dir=tmp_path, container_image=None,
                    local=True, env={"HOME": "/root"})
    assert "tuned_tables" not in unset
