"""Degeneration detectors: constructed loops, word salad, glued scripts and random
characters are caught; healthy prose (in many languages) and code pass."""

from __future__ import annotations

import argparse
import base64
import collections
import inspect
import json
import pydoc_data.topics
import random
import string
import textwrap
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_rocm_llm.correctness.degeneration import Thresholds, detect, tail_loop
from tests.degeneration_corpus import HEALTHY

PROSE = " ".join(v for v in pydoc_data.topics.topics.values())
CODE = "".join(inspect.getsource(m) for m in (json, textwrap, argparse, collections))


def names(text: str) -> set[str]:
    return {f.detector for f in detect(text)}


@given(st.text(st.characters(exclude_categories=("Cc",), exclude_characters="\ufffd"),
               max_size=47).filter(str.strip))
def test_short_text_never_flags(text: str) -> None:
    """Any text of printable characters shorter than three 16-character blocks, however
    repetitive ('aaaa...'); whitespace alone is no text (the blank detector, issue 23)."""
    assert detect(text) == []


def test_empty_text_is_healthy() -> None:
    assert detect("") == []


@given(st.integers(0, len(PROSE) - 1), st.sampled_from([200, 1000, 4000, 20000]))
def test_documentation_prose_passes(start: int, length: int) -> None:
    text = PROSE[start:start + length]
    assume(text.strip())  # a slice of only whitespace is no output (the blank detector's)
    assert detect(text) == []


@given(st.integers(0, len(CODE) - 1), st.sampled_from([200, 1000, 4000, 20000]))
def test_python_source_passes(start: int, length: int) -> None:
    text = CODE[start:start + length]
    assume(text.strip())  # a slice of only whitespace is no output (the blank detector's)
    assert detect(text) == []


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


# --- degeneration that neither repeats nor carries broken bytes ------------------------

NEW = {"word_salad", "char_entropy", "mixed_script", "script_switching"}
# letters of scripts a multilingual vocabulary holds besides Latin
SCRIPTS = [(0x430, 0x44F), (0x3B1, 0x3C9), (0x627, 0x64A), (0x5D0, 0x5EA), (0x915, 0x939),
           (0xE01, 0xE2E), (0xAC00, 0xD7A3), (0x4E00, 0x9FFF), (0x3041, 0x3096)]


@pytest.fixture(scope="module")
def tokenizer(reference_model_dir: Path):
    from pytest_rocm_llm.client.tokenizer import load_tokenizer

    return load_tokenizer(reference_model_dir)


def random_tokens(tokenizer, seed: int, n: int) -> str:
    """What garbage logits give: tokens drawn uniformly from the model's vocabulary."""
    rng = random.Random(seed)
    return tokenizer.decode([rng.randrange(tokenizer.get_vocab_size()) for _ in range(n)])


def multilingual_tokens(tokenizer, seed: int, n: int) -> str:
    """Random tokens of a multilingual vocabulary: the model's (Latin) tokens half the time,
    otherwise a 1-4 letter piece of another script, 40% of them after a space."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < 0.5:
            out.append(tokenizer.decode([rng.randrange(tokenizer.get_vocab_size())]))
        else:
            lo, hi = rng.choice(SCRIPTS)
            out.append(" " * (rng.random() < 0.4)
                       + "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 4))))
    return "".join(out)


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_outputs_in_many_languages_and_formats_pass(name: str) -> None:
    assert detect(HEALTHY[name]) == [], name


@given(st.lists(st.sampled_from(sorted(HEALTHY)), min_size=1, max_size=6, unique=True),
       st.integers(0, 400), st.sampled_from([" ", "\n", "\n\n"]))
def test_healthy_outputs_joined_and_cut_anywhere_pass(names, cut: int, sep: str) -> None:
    text = sep.join(HEALTHY[n] for n in names)
    assert detect(text[cut:]) == []


@settings(max_examples=60, deadline=None)
@given(st.integers(0, len(PROSE) - 1), st.integers(0, len(CODE) - 1))
def test_prose_and_code_interleaved_pass(p: int, c: int) -> None:
    """A model answering with text, then code, then text."""
    text = PROSE[p:p + 1500] + "\n```python\n" + CODE[c:c + 1500] + "\n```\n" + PROSE[p:p + 800]
    assert names(text) & NEW == set()


@pytest.mark.parametrize("seed", range(100))
def test_random_tokens_are_word_salad(tokenizer, seed: int) -> None:
    assert "word_salad" in names(random_tokens(tokenizer, seed, 160))


@pytest.mark.parametrize("seed", range(20))
def test_word_salad_after_a_sensible_start_is_caught(tokenizer, seed: int) -> None:
    text = HEALTHY["french"] + "\n\n" + HEALTHY["science"] + " " + random_tokens(
        tokenizer, seed, 160)
    assert "word_salad" in names(text)


@pytest.mark.parametrize("seed", range(50))
def test_random_tokens_of_a_multilingual_vocabulary_mix_scripts(tokenizer, seed: int) -> None:
    assert "mixed_script" in names(multilingual_tokens(tokenizer, seed, 100))


@pytest.mark.parametrize("seed", range(20))
def test_random_characters_are_caught(seed: int) -> None:
    rng = random.Random(seed)
    ascii_noise = "".join(rng.choice(string.printable[:95]) for _ in range(300))
    assert "char_entropy" in names("The answer is: " + ascii_noise)
    unicode_noise = "".join(" " if rng.random() < 0.15 else chr(rng.randint(*rng.choice(SCRIPTS)))
                            for _ in range(300))
    assert "mixed_script" in names(unicode_noise)


def test_an_alphabet_table_is_not_random_characters() -> None:
    """The most random-looking healthy text measured (CPython's base64.py): 5.62 bits."""
    text = inspect.getsource(base64)
    assert "char_entropy" not in names(text)


def test_new_thresholds_are_respected(tokenizer) -> None:
    salad = random_tokens(tokenizer, 0, 160)
    assert "word_salad" not in {f.detector for f in detect(salad, Thresholds(word_salad=1.0))}
    assert "word_salad" not in {
        f.detector for f in detect(salad, Thresholds(salad_window=10_000))}
    [f] = [f for f in detect(salad) if f.detector == "word_salad"]
    assert f.threshold == 0.9 and f.value > 0.9
