"""The degeneration detectors' default thresholds at their edges: an output just past a
threshold is flagged and one just short of it is not, so a threshold that drifts (doubled,
or a minimum size moved) shows up here instead of letting broken output through."""

from __future__ import annotations

import random

from pytest_rocm_llm.correctness.degeneration import Thresholds, detect

WORDS = ("the of and to a in is that for it as was with be by on not he this are or his "
         "from at which but have an they you were her she there been one all we their has "
         "would when").split()


def loop(words: int, repeats: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    block = " ".join(rng.choice(WORDS) for _ in range(words))
    return (block + " ") * repeats


def found(text: str, thresholds: Thresholds | None = None) -> dict[str, float]:
    """Each detector that fires with its value; the default thresholds unless given."""
    findings = detect(text) if thresholds is None else detect(text, thresholds)
    return {f.detector: f.value for f in findings}


def test_a_loop_compressing_just_over_5_is_flagged_by_the_default_threshold() -> None:
    text = loop(13, 6)
    ratio = found(text)["compression_ratio"]
    assert 5.0 < ratio < 6.0  # a doubled (or 6.0) threshold would let this loop through
    assert "compression_ratio" not in found(text, Thresholds(compression_ratio=ratio))
    assert "compression_ratio" not in found(loop(13, 5))  # 4.5: below


def test_compression_is_judged_from_128_bytes() -> None:
    text = "abcdefgh" * 16
    assert len(text) == 128 and found(text)["compression_ratio"] > 6.0
    assert "compression_ratio" not in found(text[:127])
    assert "compression_ratio" not in found(text, Thresholds(min_bytes=129))


def test_a_run_of_one_character_is_flagged_past_256() -> None:
    assert found("Answer: " + "!" * 257)["char_run"] == 257
    assert "char_run" not in found("Answer: " + "!" * 256)


def test_broken_characters_need_three_and_more_than_one_percent() -> None:
    bad = "\ufffd" * 3
    assert "bad_chars" in found(bad + "a" * 296)  # 3 of 299: just over 1%
    assert "bad_chars" not in found(bad + "a" * 297)  # 3 of 300: exactly 1%
    assert "bad_chars" not in found("\ufffd\x07" + "a" * 10)  # 2: a cut character or two


def test_repeated_4grams_are_judged_from_40() -> None:
    words = [f"w{i}" for i in range(10)] * 5
    assert "repeated_4gram" in found(" ".join(words[:43]))  # 40 4-grams, 3/4 repeated
    assert "repeated_4gram" not in found(" ".join(words[:42]))  # 39: too few to judge


def test_mixed_script_words_are_judged_from_20() -> None:
    assert found(" ".join(["aб"] * 20))["mixed_script"] == 1.0
    assert "mixed_script" not in found(" ".join(["aб"] * 19))
