"""Degeneration detectors: constructed loops are caught, healthy prose and code pass."""

from __future__ import annotations

import argparse
import collections
import inspect
import json
import pydoc_data.topics
import textwrap

from hypothesis import given
from hypothesis import strategies as st

from pytest_rocm_llm.degeneration import Thresholds, detect, tail_loop

PROSE = " ".join(v for v in pydoc_data.topics.topics.values())
CODE = "".join(inspect.getsource(m) for m in (json, textwrap, argparse, collections))


def names(text: str) -> set[str]:
    return {f.detector for f in detect(text)}


@given(st.text(st.characters(exclude_categories=("Cc",), exclude_characters="\ufffd"),
               max_size=47))
def test_short_text_never_flags(text: str) -> None:
    """Any text of printable characters shorter than three 16-character blocks, however
    repetitive ('aaaa...')."""
    assert detect(text) == []


def test_empty_text_is_healthy() -> None:
    assert detect("") == []


@given(st.integers(0, len(PROSE) - 1), st.sampled_from([200, 1000, 4000, 20000]))
def test_documentation_prose_passes(start: int, length: int) -> None:
    assert detect(PROSE[start:start + length]) == []


@given(st.integers(0, len(CODE) - 1), st.sampled_from([200, 1000, 4000, 20000]))
def test_python_source_passes(start: int, length: int) -> None:
    assert detect(CODE[start:start + length]) == []


@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), min_size=16,
               max_size=60).filter(lambda u: len(set(u)) > 4),
       st.integers(8, 40), st.integers(0, 20))
def test_a_block_repeated_at_the_end_is_a_tail_loop(unit: str, repeats: int, cut: int) -> None:
    text = "A sensible beginning of the answer. " + unit * repeats
    text = text[: len(text) - min(cut, len(unit) - 1)]  # cut off mid-block by max_tokens
    assert "tail_loop" in names(text)


def test_tail_loop_reports_repeats_and_period() -> None:
    repeats, period = tail_loop("Intro. " + "I think that we should go. " * 5, 16, 6000)
    assert period == len("I think that we should go. ")
    assert 5 <= repeats < 5.5


def test_long_loop_is_caught_by_every_repetition_detector() -> None:
    text = "Here is the answer: " + "the cat sat on the mat and then " * 60
    assert {"compression_ratio", "repeated_4gram", "tail_loop"} <= names(text)


def test_repetition_in_the_middle_is_caught_by_ngrams() -> None:
    text = ("Sure. " + "We went to the market to buy some fresh bread. " * 30
            + "Then we walked home by the river, talking about nothing in particular.")
    found = names(text)
    assert "repeated_4gram" in found and "tail_loop" not in found


def test_one_character_flood_is_a_char_run_but_a_rule_line_is_not() -> None:
    assert "char_run" in names("The answer is " + "!" * 400)
    assert names("#" * 80 + "\n### Section\n" + "#" * 80) == set()


def test_replacement_and_control_characters() -> None:
    garbage = "The result is " + "\ufffd\x07ab" * 20
    assert "bad_chars" in names(garbage)
    # one U+FFFD at the end is a multi-byte character cut by max_tokens, not garbage
    assert "bad_chars" not in names("A fine sentence that was cut in the middle of \ufffd")
    assert "bad_chars" not in names("tabs\tand\nnewlines\r\nare fine " * 3)


def test_thresholds_are_respected() -> None:
    text = "Intro. " + "I think that we should go. " * 5
    assert "tail_loop" not in {f.detector for f in detect(text, Thresholds(tail_repeats=9))}
    [f] = [f for f in detect(text) if f.detector == "tail_loop"]
    assert f.threshold == 3.0 and "tail_loop" in str(f)
