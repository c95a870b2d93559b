"""Long-context prompts are token-exact, seeded and hold their needles where asked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rocm_llm.config.toml import Table
from pytest_rocm_llm.correctness.degeneration import Thresholds
from pytest_rocm_llm.correctness.long_context import (
    TASKS,
    _Encoder,
    build_item,
    parse_long_context,
    score,
)
from pytest_rocm_llm.errors import ConfigError


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


def assignments(text: str) -> list[tuple[str, str]]:
    return re.findall(r"VAR ([A-Z]+) = ([A-Z]+|\d+)\.", text)


def resolve(assigned: dict[str, str], name: str) -> str:
    while not assigned[name].isdigit():
        name = assigned[name]
    return assigned[name]


@pytest.mark.parametrize("seed", range(6))
def test_variable_chains_resolve_and_only_the_asked_one_gives_the_answer(enc, seed) -> None:
    item = build_item(enc, "variable", 1024, 0, 0.9, seed=seed)
    text = enc.decode(item.input_ids)
    pairs = assignments(text)
    assigned = dict(pairs)
    assert len(assigned) == len(pairs) == 12  # three chains of four, no name reused
    # every name is assigned before it is used: each chain is in order in the text
    seen: set[str] = set()
    for name, value in pairs:
        assert value.isdigit() or value in seen, (name, value)
        seen.add(name)
    asked = re.search(r"what is the value of VAR ([A-Z]+)\?", text).group(1)
    assert text.rstrip().endswith(f"VAR {asked} =")
    assert resolve(assigned, asked) == item.answer
    # the distractor chains end in other values: 'the only number' is not the answer
    ends = {resolve(assigned, n) for n in assigned if n not in assigned.values()}
    values = set(re.findall(r"\d+", text))
    assert len(ends) == 3 and item.answer in ends and values == ends


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("task", ["multikey", "variable"])
def test_listing_every_number_of_the_prompt_scores_wrong(enc, task, seed) -> None:
    item = build_item(enc, task, 1024, 0, 0.5, seed=seed)
    numbers = list(dict.fromkeys(re.findall(r"\d+", enc.decode(item.input_ids))))
    assert item.answer in numbers and set(item.distractors) == set(numbers) - {item.answer}
    right_first = [item.answer] + [n for n in numbers if n != item.answer]
    for sep in (" ", ", ", ".\n", ". "):
        assert not score(item.answer, " " + sep.join(numbers), item.distractors)
        assert not score(item.answer, " " + sep.join(right_first), item.distractors)
    assert score(item.answer, f" {item.answer}.", item.distractors)


OTHERS = ("91730", "55102")


@pytest.mark.parametrize("output, right", [
    (" 48213", True),
    (" 48213.", True),
    (" The pass key is 48213.", True),
    (" 48213. Remember it. 48213 is the pass key.", True),  # echoing the needle
    ("48213\n\nWhat is the pass key? The pass key is", True),
    (" 48213.\nThe pass key is 482", True),  # the echo cut mid-number by max_tokens
    (" 48213. VAR ABCDE = 9", True),  # going on with the prompt's pattern, cut
    (" 48214", False),  # wrong value
    (" 148213", False),  # a longer number containing the answer is another number
    (" 4821", False),
    (" 91730 or 48213", False),  # listing: the first number is wrong
    (" 48213 or 91730", False),  # listing: the right one first is still a list
    (" 48213, 91730, 55102", False),
    (" 48213.\n91730.\n55102.", False),  # one per line, the right one first
    (" 48213. The magic number for apple is 55102.", False),  # naming another candidate
    (" 48213 48213 48213 48213", False),  # looping on the right answer
    (" 48213.\n48213.\n48213.", False),
    (" 48213. 48213. 48213. 48213", False),
    (" I do not know.", False),
    ("", False),
])
def test_scoring_is_exact(output: str, right: bool) -> None:
    assert score("48213", output, OTHERS) is right


def test_a_degenerate_output_is_never_correct() -> None:
    assert score("48213", " 48213", degenerate=False)
    assert not score("48213", " 48213", degenerate=True)


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
    with pytest.raises(ConfigError) as e:
        parse_long_context("long", table(data))
    assert f"suite.toml: key 'evals.long.{key}'" in str(e.value) and words in str(e.value)
