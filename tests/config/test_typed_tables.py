"""The pydantic models behind suite.toml: each pydantic error worded as users read it, one
merge rule for per-target overrides, a kind registry, frozen tables, and unknown keys refused
in every table by their dotted key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import Field, ValidationError

from pytest_rocm_llm.config.evals import EVALS, parse_eval
from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.config.toml import Table, TomlTable, overlay, validate
from pytest_rocm_llm.errors import ConfigError

FILE = Path("/suites/demo/suite.toml")


class Demo(TomlTable):
    count: int = Field(1, ge=1, le=10)
    rate: float = Field(1.0, gt=0)
    name: str = ""
    on: bool = False
    needed: str


@pytest.mark.parametrize("data, message", [
    ({}, "key 'demo.needed': is required but missing"),
    ({"needed": "x", "count": "4"}, "key 'demo.count': expected an integer, got string '4'"),
    ({"needed": "x", "count": 1.0}, "key 'demo.count': expected an integer, got float 1.0"),
    ({"needed": "x", "count": 11}, "key 'demo.count': 11 is out of range: must be <= 10"),
    ({"needed": "x", "count": 0}, "key 'demo.count': 0 is out of range: must be >= 1"),
    ({"needed": "x", "rate": 0}, "key 'demo.rate': 0 is out of range: must be > 0.0"),
    ({"needed": "x", "rate": float("inf")}, "key 'demo.rate': expected a finite number, got inf"),
    ({"needed": "x", "rate": True}, "key 'demo.rate': expected a number, got boolean True"),
    ({"needed": "x", "name": 3}, "key 'demo.name': expected a string, got integer 3"),
    ({"needed": "x", "on": 1}, "key 'demo.on': expected true or false, got integer 1"),
    ({"needed": "x", "cuont": 2},
     "key 'demo.cuont': unknown key; known keys here: count, rate, name, on, needed"),
    # a missing key is reported before an unknown one (often the same key misspelt)
    ({"neded": "x"}, "key 'demo.needed': is required but missing"),
])
def test_each_pydantic_error_is_worded_as_before(data: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate(Demo, Table(data, FILE, "demo"))
    assert str(info.value) == f"{FILE}: {message}"


def test_overlay_replaces_keys_and_merges_subtables_key_by_key() -> None:
    base = {"a": 1, "t": {"x": 1, "y": 2}, "l": [1, 2]}
    assert overlay(base, {"a": 2, "t": {"y": 3}, "l": [3]}) == \
        {"a": 2, "t": {"x": 1, "y": 3}, "l": [3]}
    assert base == {"a": 1, "t": {"x": 1, "y": 2}, "l": [1, 2]}, "the base is not changed"


def test_every_evaluation_kind_names_a_parser_and_a_runner_that_load() -> None:
    from pytest_rocm_llm.kinds import load

    assert EVALS.names() == ("gsm8k", "arithmetic", "gpqa", "tau2", "parity", "long_context")
    for kind in EVALS:
        assert callable(load(kind.parser)) and callable(load(kind.runner)), kind.name


def test_parsed_tables_are_frozen() -> None:
    demo = validate(Demo, Table({"needed": "x"}, FILE, "demo"))
    with pytest.raises(ValidationError):
        demo.count = 3  # type: ignore[misc]


SUITE = """
[suite]
name = "demo"
[model]
id = "org/m"
[profiles.plain]
[profiles.spec]
[workloads.w]
kind = "single_stream"
input_tokens = 8
output_tokens = 8
requests = 2
[evals.par]
kind = "parity"
profile = "spec"
reference_profile = "plain"
[evals.lc]
kind = "long_context"
lengths = [512]
[checks.c]
workload = "w"
metric = "output_tok_s"
min = 1
source = "s"
[targets.cpu.profiles.spec]
[targets.cpu.workloads.w]
[targets.cpu.evals.par]
[targets.cpu.checks.c]
[targets.cpu.model]
"""

TABLES = ["suite", "model", "profiles.plain", "workloads.w", "evals.par", "evals.lc",
          "checks.c", "targets.cpu", "targets.cpu.profiles.spec", "targets.cpu.workloads.w",
          "targets.cpu.evals.par", "targets.cpu.checks.c", "targets.cpu.model"]


def test_the_suite_parses() -> None:
    suite = parse_suite(FILE, tomllib.loads(SUITE))
    assert suite.target_models["cpu"].id == "org/m"


@pytest.mark.parametrize("table", TABLES)
def test_an_unknown_key_is_refused_in_every_table(table: str) -> None:
    data = tomllib.loads(SUITE)
    node = data
    for part in table.split("."):
        node = node[part]
    node["tyop"] = 1
    with pytest.raises(ConfigError, match=f"key '{table}.tyop': unknown key"):
        parse_suite(FILE, data)


@pytest.mark.parametrize("other", ["long_context", "gsm8k"])
def test_a_target_override_cannot_change_an_evaluations_kind(other: str) -> None:
    text = SUITE.replace("[targets.cpu.evals.par]", f'[targets.cpu.evals.par]\nkind = "{other}"')
    with pytest.raises(ConfigError) as info:
        parse_suite(FILE, tomllib.loads(text))
    assert f"key 'targets.cpu.evals.par.kind': a target override cannot change the kind " \
           f"(parity -> {other})" in str(info.value)


def test_a_target_override_cannot_change_a_workloads_kind() -> None:
    """As for evaluations. Before, the override was read against the other kind's schema
    and the error named a key the user never wrote (request_rate)."""
    text = SUITE.replace("[targets.cpu.workloads.w]",
                         '[targets.cpu.workloads.w]\nkind = "fixed_rate"')
    with pytest.raises(ConfigError) as info:
        parse_suite(FILE, tomllib.loads(text))
    assert "key 'targets.cpu.workloads.w.kind': a target override cannot change the kind " \
           "(single_stream -> fixed_rate)" in str(info.value)


def test_an_error_in_an_override_names_the_targets_key() -> None:
    text = SUITE.replace("[targets.cpu.checks.c]", "[targets.cpu.checks.c]\nmin = \"x\"")
    with pytest.raises(ConfigError, match="key 'targets.cpu.checks.c.min': expected a number"):
        parse_suite(FILE, tomllib.loads(text))
    text = SUITE.replace("[targets.cpu.evals.par]", "[targets.cpu.evals.par]\nprompts = 0")
    with pytest.raises(ConfigError, match="key 'targets.cpu.evals.par.prompts': 0 is out"):
        parse_suite(FILE, tomllib.loads(text))


def test_parse_eval_refuses_an_unknown_kind_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"key 'evals.x.kind': 'mmlu' is not an evaluation"):
        parse_eval("x", Table({"kind": "mmlu"}, FILE, "evals.x"))
