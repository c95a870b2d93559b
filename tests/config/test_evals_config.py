"""[evals.<name>] tables of the accuracy kinds: typed configs, defaults per kind, and
UsageErrors that name the file and the dotted key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pytest_rocm_llm.config.toml import Table
from pytest_rocm_llm.correctness.accuracy.config import AccuracyConfig, build_items, parse_accuracy
from pytest_rocm_llm.errors import ConfigError, DatasetUnavailable

FILE = Path("/suites/demo/suite.toml")


def parse(text: str, base: AccuracyConfig | None = None) -> AccuracyConfig:
    data = tomllib.loads(text)
    return parse_accuracy("acc", Table(data, FILE, "evals.acc"), base)


def test_defaults_per_kind() -> None:
    g = parse('kind = "gsm8k"')
    assert (g.shots, g.scoring, g.limit, g.max_tokens, g.temperature) == \
        (5, "flexible", None, 512, 0.0)
    a = parse('kind = "arithmetic"\nshots = 3\nmax_steps = 1')
    assert (a.shots, a.limit, a.max_steps) == (3, 50, 1)
    q = parse('kind = "gpqa"\nlimit = 20\nprofile = "fp8"')
    assert (q.scoring, q.limit, q.profile, q.shots) == ("strict", 20, "fp8", 0)
    t = parse('kind = "tau2"\ndomain = "airline"\nnum_trials = 4\ntau2_command = ["uv", "run", '
              '"tau2"]')
    assert (t.domain, t.num_trials, t.tau2_command) == ("airline", 4, ("uv", "run", "tau2"))


@pytest.mark.parametrize("text, key, message", [
    ('kind = "mmlu"', "evals.acc.kind", "not an accuracy eval kind"),
    ('kind = "gsm8k"\nlimit = 0', "evals.acc.limit", "out of range"),
    ('kind = "gsm8k"\nscoring = "loose"', "evals.acc.scoring", "not one of strict, flexible"),
    ('kind = "gpqa"\nshots = 5', "evals.acc.shots", "unknown key"),  # GPQA is zero-shot
    ('kind = "gsm8k"\ndomain = "airline"', "evals.acc.domain", "unknown key"),
    ('kind = "tau2"', "evals.acc.domain", "required but missing"),
    ('kind = "gsm8k"\nconcurency = 4', "evals.acc.concurency", "unknown key"),
    ('kind = "gsm8k"\ntemperature = "0"', "evals.acc.temperature", "expected a number"),
])
def test_bad_tables_name_file_and_key(text: str, key: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse(text)
    assert str(e.value).startswith(f"{FILE}: key '{key}'")
    assert message in str(e.value)


def test_target_override_keeps_the_base_and_its_kind() -> None:
    base = parse('kind = "gsm8k"\nlimit = 1319\nshots = 5\nconcurrency = 64')
    cpu = parse("limit = 20\nconcurrency = 2", base)
    assert (cpu.kind, cpu.limit, cpu.shots, cpu.concurrency) == ("gsm8k", 20, 5, 2)
    with pytest.raises(ConfigError, match="cannot change the kind"):
        parse('kind = "gpqa"', base)


def test_build_items_per_kind(tmp_path: Path) -> None:
    assert len(build_items(parse('kind = "arithmetic"\nlimit = 7'), None)) == 7
    with pytest.raises(DatasetUnavailable, match="gsm8k/test.jsonl"):
        build_items(parse('kind = "gsm8k"'), tmp_path)
    with pytest.raises(DatasetUnavailable, match="no CSV path"):
        build_items(parse('kind = "gpqa"'), tmp_path)
    with pytest.raises(ValueError, match="run_tau2"):
        build_items(parse('kind = "tau2"\ndomain = "mock"'), tmp_path)
