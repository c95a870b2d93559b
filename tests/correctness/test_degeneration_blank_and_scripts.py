"""Degeneration the other detectors miss (issue 23 item 9): an output of nothing but
whitespace, and a salad of real words from several scripts (each word in one script, so
no word mixes scripts); healthy text in many languages, joined or cited, stays silent."""

from __future__ import annotations

import random

import pytest

from pytest_rocm_llm.correctness.degeneration import Thresholds, detect
from tests.degeneration_corpus import HEALTHY

SCRIPTED = ["russian", "greek", "japanese", "korean", "arabic", "hindi", "french", "chinese"]


def names(text: str, t: Thresholds | None = None) -> set[str]:
    return {f.detector for f in detect(text, t or Thresholds())}


@pytest.mark.parametrize("text", [" ", "\n", "\n\n\n", " \t \n " * 200])
def test_whitespace_only_output_is_blank(text: str) -> None:
    [f] = detect(text)
    assert f.detector == "blank" and f.value == len(text)


def test_empty_output_is_not_blank() -> None:
    assert detect("") == []


def salad(seed: int, n: int = 80) -> str:
    rng = random.Random(seed)
    words = {k: [w.strip(".,;:!?") for w in HEALTHY[k].split()] for k in SCRIPTED}
    return " ".join(rng.choice(words[rng.choice(SCRIPTED)]) for _ in range(n))


@pytest.mark.parametrize("seed", range(20))
def test_real_words_of_several_scripts_in_a_row_are_salad(seed: int) -> None:
    text = salad(seed)
    assert "script_switching" in names(text)
    assert "mixed_script" not in names(text)  # no word mixes scripts: the old detectors miss it


def test_salad_after_a_healthy_start_is_caught() -> None:
    assert "script_switching" in names(HEALTHY["french"] + "\n\n" + salad(3))


def test_languages_joined_cited_or_borrowing_terms_are_not_salad() -> None:
    assert "script_switching" not in names(" ".join(HEALTHY[k] for k in SCRIPTED))
    assert "script_switching" not in names(HEALTHY["translations"] * 3)
    hindi = "हमने इस परियोजना में Python और PostgreSQL का उपयोग किया और Docker से चलाया " * 5
    assert "script_switching" not in names(hindi)


def test_its_threshold_and_sizes_are_respected() -> None:
    text = salad(0)
    assert "script_switching" not in names(text, Thresholds(script_switching=1.0))
    assert "script_switching" not in names(text, Thresholds(switch_window=10_000))
    assert "script_switching" not in names(text, Thresholds(switch_scripts=20))
