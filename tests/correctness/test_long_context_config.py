"""``[evals.<name>]`` of kind long_context: every key read under its own name, its
documented default, its bounds at the edge, the degeneration thresholds table, and a
per-target override inheriting the rest."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm_llm.config.toml import Table
from pytest_rocm_llm.correctness.degeneration import Thresholds
from pytest_rocm_llm.correctness.long_context import LongContextConfig, parse_long_context
from pytest_rocm_llm.errors import ConfigError

REQUIRED_KEYS = {"kind": "long_context", "lengths": [2048]}
EVERY_KEY: dict[str, Any] = {
    "profile": "long", "lengths": (256, 4096), "tasks": ("variable", "passkey"),
    "samples": 2, "depths": (0.0, 1.0), "max_tokens": 8, "seed": 5, "api": "completions",
}
DEFAULTS: dict[str, Any] = {
    "profile": None, "tasks": ("passkey", "multikey", "variable"), "samples": 4,
    "depths": (0.1, 0.5, 0.9), "max_tokens": 32, "seed": 0, "api": "generate",
    "thresholds": Thresholds(),
}
BOUNDS = [("samples", 1, 100_000), ("max_tokens", 1, 100_000), ("seed", 0, None)]


def parse(data: dict[str, Any], base: LongContextConfig | None = None) -> LongContextConfig:
    return parse_long_context("long", Table(data, Path("suite.toml"), "evals.long"), base)


def error(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as e:
        parse(data)
    return str(e.value)


def toml(values: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


def test_every_key_is_read_under_its_own_name() -> None:
    c = parse({"kind": "long_context", **toml(EVERY_KEY)})
    assert {k: getattr(c, k) for k in EVERY_KEY} == EVERY_KEY
    assert (c.name, c.kind) == ("long", "long_context")
    assert all(type(n) is int for n in c.lengths)


def test_documented_defaults() -> None:
    c = parse(dict(REQUIRED_KEYS))
    assert {k: getattr(c, k) for k in DEFAULTS} == DEFAULTS
    assert parse({"lengths": [2048]}).kind == "long_context"


def test_every_threshold_is_read_and_keeps_its_type() -> None:
    changed = {f.name: (getattr(Thresholds(), f.name) * 2 + 1) for f in fields(Thresholds)}
    c = parse({**REQUIRED_KEYS, "thresholds": changed})
    assert c.thresholds == Thresholds(**changed)
    for f in fields(Thresholds):
        assert type(getattr(c.thresholds, f.name)) is type(getattr(Thresholds(), f.name))
    assert "expected an integer" in error({**REQUIRED_KEYS, "thresholds": {"min_bytes": 1.5}})
    assert parse({**REQUIRED_KEYS, "thresholds": {"compression_ratio": 0}}) \
        .thresholds.compression_ratio == 0
    msg = error({**REQUIRED_KEYS, "thresholds": {"compression_ratio": -0.1}})
    assert "evals.long.thresholds.compression_ratio" in msg and "must be >= 0" in msg


def test_an_override_inherits_every_key_it_does_not_set() -> None:
    base = parse({"kind": "long_context", **toml(EVERY_KEY),
                  "thresholds": {"tail_min_block": 30}})
    assert parse({}, base=base) == base
    o = parse({"thresholds": {"min_bytes": 64}}, base=base)
    assert o.thresholds == Thresholds(tail_min_block=30, min_bytes=64)


@pytest.mark.parametrize("key, low, high", BOUNDS)
def test_bounds_are_inclusive_and_checked(key: str, low: int, high: int | None) -> None:
    assert getattr(parse({**REQUIRED_KEYS, key: low}), key) == low
    assert f"must be >= {low}" in error({**REQUIRED_KEYS, key: low - 1})
    assert "expected an integer" in error({**REQUIRED_KEYS, key: low + 0.5})
    if high is not None:
        assert getattr(parse({**REQUIRED_KEYS, key: high}), key) == high
        assert f"must be <= {high}" in error({**REQUIRED_KEYS, key: high + 1})


def test_lengths_and_depths_at_their_edges() -> None:
    assert parse({**REQUIRED_KEYS, "lengths": [256]}).lengths == (256,)
    assert parse({**REQUIRED_KEYS, "depths": [0, 1]}).depths == (0.0, 1.0)
    for depths in ([-0.01], [1.01], []):
        assert "expected fractions of the context in [0, 1]" in error(
            {**REQUIRED_KEYS, "depths": depths})
    for lengths in ([255], [2048, 255], [], [300.5]):
        msg = error({**REQUIRED_KEYS, "lengths": lengths})
        assert msg.startswith("suite.toml: key 'evals.long.lengths': ")
        assert "expected whole token counts >= 256, e.g. [2048, 8192, 32768]" in msg


@pytest.mark.parametrize("key, value, words", [
    ("kind", "parity", "'parity': this table is read as a long_context evaluation"),
    ("api", "chat", "'chat': long-context prompts are token ids: 'generate' or "
                    "'completions'"),
    ("tasks", [], "expected at least one of passkey, multikey, variable"),
    ("tasks", ["haystack"], "not one of"),
])
def test_invalid_values_are_named_with_the_fix(key: str, value: Any, words: str) -> None:
    msg = error({**REQUIRED_KEYS, key: value})
    assert msg.startswith(f"suite.toml: key 'evals.long.{key}': ") and words in msg


def test_unknown_keys_are_rejected() -> None:
    assert "unknown key" in error({**REQUIRED_KEYS, "lenghts": [2048]})
    assert "unknown key" in error({**REQUIRED_KEYS, "thresholds": {"zlib": 2}})
