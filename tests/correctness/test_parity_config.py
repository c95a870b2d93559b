"""``[evals.<name>]`` of kind parity: every key read under its own name, its documented
default, its bounds at the edge, and a per-target override inheriting the rest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_rocm_llm.config.toml import Table
from pytest_rocm_llm.correctness.parity import ParityConfig, parse_parity
from pytest_rocm_llm.errors import ConfigError

REQUIRED_KEYS = {"kind": "parity", "profile": "eagle", "reference_profile": "plain"}
# every optional key at a value other than its default
EVERY_KEY: dict[str, Any] = {
    "prompts": 7, "hypothesis_examples": 3, "max_tokens": 9, "top_logprobs": 4,
    "tolerance": 0.25, "first_k": 2, "min_agree_ratio": 0.75, "max_near_tie_ratio": 0.2,
    "exact": True, "seed": 11, "api": "completions", "source": "random_ids",
}
DEFAULTS: dict[str, Any] = {
    "prompts": 16, "hypothesis_examples": 20, "max_tokens": 32, "top_logprobs": 5,
    "tolerance": 0.1, "first_k": 8, "min_agree_ratio": 1.0, "max_near_tie_ratio": 0.5,
    "exact": False, "seed": 0, "api": "generate", "source": "natural",
}
# key, lowest accepted, highest accepted (None: unbounded), whole numbers only
BOUNDS = [
    ("prompts", 1, 100_000, True),
    ("hypothesis_examples", 0, 100_000, True),
    ("max_tokens", 1, 100_000, True),
    ("top_logprobs", 1, 100, True),
    ("tolerance", 0.0, None, False),
    ("first_k", 0, None, True),
    ("min_agree_ratio", 0.0, 1.0, False),
    ("max_near_tie_ratio", 0.0, 1.0, False),
    ("seed", 0, None, True),
]


def parse(data: dict[str, Any], base: ParityConfig | None = None) -> ParityConfig:
    return parse_parity("spec", Table(data, Path("suite.toml"), "evals.spec"), base)


def error(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as e:
        parse(data)
    return str(e.value)


def test_every_key_is_read_under_its_own_name() -> None:
    c = parse({**REQUIRED_KEYS, **EVERY_KEY})
    assert {k: getattr(c, k) for k in EVERY_KEY} == EVERY_KEY
    assert (c.name, c.kind, c.profile, c.reference_profile) == ("spec", "parity", "eagle",
                                                                 "plain")


def test_documented_defaults() -> None:
    c = parse(dict(REQUIRED_KEYS))
    assert {k: getattr(c, k) for k in DEFAULTS} == DEFAULTS
    assert parse({"profile": "a", "reference_profile": "b"}).kind == "parity"


def test_an_override_inherits_every_key_it_does_not_set() -> None:
    base = parse({**REQUIRED_KEYS, **EVERY_KEY})
    assert parse({}, base=base) == base
    assert parse({"seed": 12}, base=base).seed == 12


@pytest.mark.parametrize("key, low, high, whole", BOUNDS)
def test_bounds_are_inclusive_and_checked(key: str, low: float, high: float | None,
                                          whole: bool) -> None:
    assert getattr(parse({**REQUIRED_KEYS, key: low}), key) == low
    step = 1 if whole else 0.01
    msg = error({**REQUIRED_KEYS, key: low - step})
    assert f"key 'evals.spec.{key}'" in msg and f"must be >= {low}" in msg
    if high is not None:
        assert getattr(parse({**REQUIRED_KEYS, key: high}), key) == high
        msg = error({**REQUIRED_KEYS, key: high + step})
        assert f"key 'evals.spec.{key}'" in msg and f"must be <= {high}" in msg
    if whole:
        assert "expected an integer" in error({**REQUIRED_KEYS, key: low + 0.5})
    else:
        assert getattr(parse({**REQUIRED_KEYS, key: low + 0.5}), key) == low + 0.5


@pytest.mark.parametrize("key, value, words", [
    ("kind", "long_context", "'long_context': this table is read as a parity evaluation"),
    ("api", "chat", "'chat': parity needs token ids and logprobs: 'generate' or "
                    "'completions'"),
    ("source", "wiki", "'wiki' is not 'natural' or 'random_ids'"),
    ("reference_profile", "eagle", "is the same profile as 'profile' ('eagle'): parity "
                                   "compares a speculative server with a plain one"),
    ("exact", "yes", "expected true or false"),
])
def test_invalid_values_are_named_with_the_fix(key: str, value: Any, words: str) -> None:
    msg = error({**REQUIRED_KEYS, key: value})
    assert msg.startswith(f"suite.toml: key 'evals.spec.{key}': ") and words in msg


def test_unknown_keys_are_rejected_after_the_known_ones_are_read() -> None:
    msg = error({**REQUIRED_KEYS, "tolerence": 0.2})
    assert "evals.spec.tolerence" in msg and "unknown key" in msg
