"""Long-context prompts are token-exact, seeded and hold their needles where asked."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rocm_llm.degeneration import Thresholds
from pytest_rocm_llm.longcontext import (
    TASKS,
    LongContextConfig,
    _Encoder,
    build_item,
    build_items,
    parse_long_context,
)
from pytest_rocm_llm.tomlschema import Table


@pytest.fixture(scope="module")
def enc(reference_model_dir: Path) -> _Encoder:
    return _Encoder(str(reference_model_dir / "tokenizer.json"))


@settings(max_examples=40)
@given(task=st.sampled_from(TASKS), length=st.integers(256, 6000),
       depth=st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]), seed=st.integers(0, 10**6))
def test_prompts_are_exactly_the_length_asked_for(enc, task, length, depth, seed) -> None:
    item = build_item(enc, task, length, 0, depth, seed)
    assert len(item.input_ids) == length
    text = enc.decode(item.input_ids)
    assert item.answer in text
    # the tokenizer agrees: the decoded prompt re-encodes to about the same length (pieces
    # encoded apart may merge differently at their seams; ids are sent, not text)
    assert abs(len(enc(text)) - length) <= length * 0.02 + 8


@pytest.mark.parametrize("depth", [0.1, 0.5, 0.9])
def test_passkey_sits_at_its_depth(enc, depth: float) -> None:
    item = build_item(enc, "passkey", 2048, 0, depth, seed=1)
    text = enc.decode(item.input_ids)
    where = text.index(f"The pass key is {item.answer}") / len(text)
    assert abs(where - depth) < 0.08, where


def test_variable_chain_is_in_order_and_asks_for_the_last(enc) -> None:
    item = build_item(enc, "variable", 1024, 0, 0.9, seed=2)
    text = enc.decode(item.input_ids)
    lines = [s.strip() for s in text.split(".") if s.strip().startswith("VAR ")]
    assert lines[0].endswith(f"= {item.answer}") and len(lines) == 4
    names = [ln.split()[1] for ln in lines]
    assert all(ln.endswith(f"= {prev}") for prev, ln in zip(names, lines[1:]))
    assert text.rstrip().endswith(f"VAR {names[-1]} =")


def test_multikey_asks_for_one_of_several_keys(enc) -> None:
    item = build_item(enc, "multikey", 1024, 0, 0.5, seed=3)
    text = enc.decode(item.input_ids)
    assert text.count("One of the special magic numbers for") == 4
    assert f"is: {item.answer}." in text


def test_items_are_seeded_and_cycle_depths(reference_model_dir: Path) -> None:
    tok = str(reference_model_dir / "tokenizer.json")
    c = LongContextConfig("lc", "long_context", None, (300, 600), samples=4, seed=7)
    a, b = build_items(c, tok), build_items(c, tok)
    assert a == b and len(a) == 2 * 3 * 4
    assert [it.depth for it in a[:4]] == [0.1, 0.5, 0.9, 0.1]
    other = build_items(LongContextConfig("lc", "long_context", None, (300,), seed=8), tok)
    assert other[0].input_ids != a[0].input_ids


def test_a_length_too_short_for_the_task_is_a_clear_error(enc) -> None:
    with pytest.raises(ValueError, match="length 40 is too short for task 'multikey'"):
        build_item(enc, "multikey", 40, 0, 0.5, seed=0)


def table(data: dict) -> Table:
    return Table(data, Path("suite.toml"), "evals.long")


def test_parse_long_context_with_thresholds_and_override() -> None:
    c = parse_long_context("long", table({
        "kind": "long_context", "lengths": [2048, 8192], "tasks": ["passkey"],
        "thresholds": {"compression_ratio": 6.0, "tail_min_block": 24}}))
    assert c.lengths == (2048, 8192) and c.tasks == ("passkey",)
    assert c.thresholds == Thresholds(compression_ratio=6.0, tail_min_block=24)
    assert isinstance(c.thresholds.tail_min_block, int)
    o = parse_long_context("long", table({"lengths": [512]}), base=c)
    assert o.lengths == (512,) and o.thresholds == c.thresholds and o.tasks == ("passkey",)


@pytest.mark.parametrize("data, key, words", [
    ({"kind": "long_context", "lengths": [100]}, "lengths", ">= 256"),
    ({"kind": "long_context", "lengths": [1024.5]}, "lengths", "whole token counts"),
    ({"kind": "long_context", "lengths": [1024], "tasks": ["haystack"]}, "tasks",
     "not one of"),
    ({"kind": "long_context", "lengths": [1024], "depths": [1.5]}, "depths", "[0, 1]"),
    ({"kind": "long_context", "lengths": [1024], "thresholds": {"zlib": 2}},
     "thresholds.zlib", "unknown key"),
    ({"kind": "long_context", "lengths": [1024], "samples": 0}, "samples", "out of range"),
])
def test_parse_long_context_errors_name_file_and_key(data, key, words) -> None:
    with pytest.raises(pytest.UsageError) as e:
        parse_long_context("long", table(data))
    assert f"suite.toml: key 'evals.long.{key}'" in str(e.value) and words in str(e.value)
