"""The degeneration detectors at their edges, on small hand-made texts: each detector's
threshold is strict where the code says ``>`` and inclusive where it says ``>=`` (exactly at
the threshold on either side), minimum sizes count the text that is exactly that size, an
empty or too-short input measures 0, and each windowed measure looks at every window it
promises (the first, the middle, the last, the tail), with exact values."""

from __future__ import annotations

import json
import math

import pytest

from pytest_rocm_llm.correctness.degeneration import (
    Thresholds,
    bad_chars,
    compression_ratio,
    detect,
    longest_char_run,
    max_char_entropy,
    max_window_compression,
    mixed_script_words,
    repeated_ngram_fraction,
    tail_loop,
    word_salad,
)

# 64 characters without whitespace and without a run of one character: compresses badly
NOISE = "q7Vx2LmT9bRz4KpW1cYs8HdN3fJg6QwE0aUk5XrB7nMv2ZtP9yGh4SjC1eLo8DiF"
LOOP = "ab" * 32  # 64 characters that compress well


DEFAULT = Thresholds()


def found(text: str, thresholds: Thresholds = DEFAULT) -> dict[str, float]:
    return {f.detector: f.value for f in detect(text, thresholds)}


def ratio(text: str) -> float:
    return compression_ratio(text.encode())


# --- nothing to measure -----------------------------------------------------------------

MOST_SENSITIVE = Thresholds(
    compression_ratio=0.0, min_bytes=0, repeated_4gram=0.0, min_4grams=0, tail_repeats=1.0,
    max_char_run=0, bad_char_rate=0.0, bad_char_min_count=0, word_salad=0.0, salad_window=0,
    char_entropy=0.0, mixed_script=0.0, mixed_script_min_words=0)


def test_an_empty_output_is_healthy_even_at_the_most_sensitive_thresholds() -> None:
    """With every minimum at 0 each detector judges "", and each measures 0 in it."""
    assert detect("", MOST_SENSITIVE) == []


def test_empty_and_blank_inputs_measure_zero() -> None:
    assert compression_ratio(b"") == 0.0
    assert repeated_ngram_fraction("") == (0.0, 0)
    assert repeated_ngram_fraction("only three words") == (0.0, 0)
    assert tail_loop("", 16, 6000) == (0.0, 0)
    assert tail_loop("no loop at the end of this sentence at all", 16, 6000) == (0.0, 0)
    assert longest_char_run("") == 0
    assert longest_char_run(" \n\t ") == 0
    assert max_char_entropy("", 8) == 0.0
    assert max_char_entropy("a" * 40, 8) == 0.0  # one character: no uncertainty
    assert mixed_script_words("") == (0.0, 0)
    assert mixed_script_words("1 2 3 ; x") == (0.0, 0)  # no word of two letters


# --- compression: collapsing, whole text or windows -------------------------------------

def test_runs_of_one_character_and_whitespace_are_collapsed_before_compressing() -> None:
    assert max_window_compression("x" + "-" * 80 + "y", 1024) == ratio("x---y")
    assert max_window_compression("a  \n\t b", 1024) == ratio("a b")


def test_undecodable_surrogates_from_json_do_not_break_the_detectors() -> None:
    text = json.loads('"' + "lone \\ud800 surrogate " * 20 + '"')
    assert "\ud800" in text
    assert max_window_compression(text, 1024) == ratio(text.replace("\ud800", "?"))
    detect(text)  # no UnicodeEncodeError


def test_up_to_two_windows_the_text_is_compressed_whole() -> None:
    text = NOISE + NOISE  # exactly 2 windows of 64: the repeat is seen only whole
    assert max_window_compression(text, 64) == ratio(text) > ratio(NOISE)
    short = NOISE + NOISE[:40]  # between 1 and 2 windows
    assert max_window_compression(short, 64) == ratio(short)


def test_past_two_windows_a_loop_is_judged_by_its_own_window() -> None:
    # 2.5 windows with the loop in the tail: the whole text would dilute it
    text = NOISE + NOISE[::-1][:32] + LOOP
    assert len(text) == 160
    assert max_window_compression(text, 64) == ratio(LOOP) > ratio(text)


def test_a_loop_is_found_in_the_first_a_middle_and_the_last_window() -> None:
    other = NOISE[::-1]
    first = LOOP + NOISE + other + "tail of ten"  # not a multiple of the window
    assert max_window_compression(first, 64) == ratio(LOOP)
    middle = NOISE + other + LOOP + NOISE  # a multiple of the window: no extra tail
    assert max_window_compression(middle, 64) == ratio(LOOP)
    last = NOISE + other + LOOP
    assert max_window_compression(last, 64) == ratio(LOOP)


def test_the_tail_window_is_a_full_window_never_a_shorter_piece() -> None:
    end = NOISE[:10] + LOOP[:53]  # compresses better alone than with the byte before it
    text = NOISE + NOISE[::-1] + NOISE[:63] + "Z" + end  # 4 windows minus one byte
    assert len(text) == 4 * 64 - 1
    assert max_window_compression(text, 64) == ratio("Z" + end) < ratio(end)


# --- repeated 4-grams -------------------------------------------------------------------

def test_repeated_4grams_fire_only_past_the_threshold() -> None:
    words = [f"word{i}" for i in range(20)] * 3
    at = " ".join(words[:43])  # 40 4-grams, 20 distinct: exactly 0.5
    assert repeated_ngram_fraction(at) == (0.5, 40)
    assert "repeated_4gram" not in found(at)
    past = " ".join(words[:44])  # 41 4-grams, 20 distinct
    assert found(past)["repeated_4gram"] == 1 - 20 / 41


# --- tail loop --------------------------------------------------------------------------

BLOCK = "one two three four, "  # 20 characters


def test_a_block_repeated_exactly_three_times_is_a_tail_loop() -> None:
    text = "Answer: " + BLOCK * 3
    # trailing whitespace is stripped: the loop is BLOCK rotated to end in ","
    assert tail_loop(text, 16, 6000) == (3.0, 20)
    assert found(text)["tail_loop"] == 3.0
    assert "tail_loop" not in found("Answer: " + BLOCK * 3, Thresholds(tail_repeats=3.05))
    # without the space before it, one character short of three repeats
    assert tail_loop(BLOCK * 3, 16, 6000) == (0.0, 0)


def test_trailing_whitespace_after_a_loop_is_ignored() -> None:
    text = "Sure, here it is. " + "we went on and on " * 5 + "  \n\n"
    repeats, period = tail_loop(text, 16, 6000)
    assert period == 18 and repeats >= 5


def test_a_loop_of_two_characters_is_reported_with_the_shortest_long_enough_block() -> None:
    text = "ha" * 24  # 48 characters, periodic from the very first one
    assert tail_loop(text, 16, 6000) == (3.0, 16)
    assert tail_loop("ha" * 40, 16, 6000) == (5.0, 16)


def test_repeats_count_only_the_periodic_part_of_the_end() -> None:
    block = "abcdefghijklmnop"  # 16 characters
    # 'X' differs from the block's last character: the loop starts right after it
    assert tail_loop("Intro text X" + block * 3, 16, 6000) == (3.0, 16)
    # the loop reaches back into the intro by the characters that happen to match ("nop")
    assert tail_loop("Intro text Xnop" + block * 3, 16, 6000) == (51 / 16, 16)
    assert tail_loop("Intro text Xop" + block * 3, 16, 6000) == (50 / 16, 16)
    assert tail_loop("Intro Xmnop" + block * 4 + "abcdefg", 16, 6000) == ((4 + 64 + 7) / 16, 16)


def test_three_characters_are_not_three_repeats_of_a_two_character_block() -> None:
    for text in ("aba", "abab", "ababa"):
        assert tail_loop(text, 2, 100) == (0.0, 0)
    assert tail_loop("ababab", 2, 100) == (3.0, 2)


# --- single-character runs and broken characters ----------------------------------------

def test_control_characters_alone_are_bad_characters() -> None:
    assert bad_chars("a\x00b\x1bc\x7f\x07") == 4
    assert bad_chars("tab\tnewline\nreturn\r") == 0
    assert found("\x00\x01\x02" + "a" * 100)["bad_chars"] == 3 / 103


# --- word salad -------------------------------------------------------------------------

EIGHT = "alpha bravo charlie delta echo foxtrot golf hotel"


def test_a_line_of_exactly_line_words_words_is_running_text() -> None:
    assert word_salad(EIGHT, 60, 8) == (0.0, 8)  # judged, but fewer than a window
    assert word_salad(EIGHT, 60, 9) == (0.0, 0)


def test_word_salad_is_judged_from_exactly_one_window_of_words() -> None:
    assert word_salad(EIGHT, 8, 8) == (1.0, 8)
    assert word_salad(EIGHT, 9, 8) == (0.0, 8)
    t = Thresholds(salad_window=8, salad_line_words=8)
    assert found(EIGHT, t)["word_salad"] == 1.0
    assert "word_salad" not in found(EIGHT, Thresholds(salad_window=9, salad_line_words=8))


def test_a_word_counts_as_new_once_per_window() -> None:
    assert word_salad("cat cat cat cat", 4, 1) == (0.25, 4)
    assert word_salad("cat the dog the", 4, 1) == (0.5, 4)


def salad(words: str, window: int = 4) -> float:
    value, judged = word_salad(words, window, 1)
    assert judged == len(words.split())
    return value


def test_salad_is_found_in_the_first_a_middle_and_the_last_window() -> None:
    assert salad("red blue green pink the of the of the of the of") == 1.0
    assert salad("the of the of the of red blue green pink the of the of the of") == 1.0
    # the last window, which the half-window steps do not reach
    assert salad("the of the of the of the red blue green pink") == 1.0
    # one word before the end: a stride start, and not the last window
    assert salad("the of the of the of red blue green pink the") == 1.0


def test_salad_windows_start_every_half_window_and_at_the_end() -> None:
    # a salad at an odd offset is seen three quarters at a time by windows of 4
    assert salad("the the the red blue green pink the the the the") == 0.75
    # a window of 2 steps by 1: every pair
    assert salad("the red blue the the", 2) == 1.0
    assert salad("the red the", 1) == 1.0  # a window of one word
    assert salad("the of the", 1) == 0.0


# --- character entropy ------------------------------------------------------------------

def test_entropy_of_a_text_exactly_one_window_long() -> None:
    assert max_char_entropy("abcdefgh", 8) == 3.0
    assert max_char_entropy("aabbccdd", 8) == 2.0
    assert max_char_entropy("abcdefg", 8) == 0.0  # shorter than a window: not judged


def test_random_characters_after_a_long_healthy_start_are_found() -> None:
    assert max_char_entropy("a" * 16 + "abcdefgh", 8) == 3.0
    assert max_char_entropy("aaaa" + "abcdefgh" + "aaaa", 8) == 3.0  # a half-window step


def test_entropy_windows_start_every_half_window() -> None:
    # eight distinct characters at offset 2 are seen by the windows at 0, 4 and 8 only in
    # part: "cdefghaa" (six once, one twice) scores highest
    assert max_char_entropy("aa" + "abcdefgh" + "aaaaaa", 8) == 6 * 3 / 8 + 2 / 8 * 2
    assert max_char_entropy("aabbb", 2) == 1.0  # a window of 2 steps by 1: every pair


def test_windows_of_mostly_other_scripts_are_skipped_not_the_rest() -> None:
    assert max_char_entropy("é" * 8 + "abcdefgh", 8) == 3.0
    assert max_char_entropy("你好你好你好你好" + "aabbccdd", 8) == 2.0


def test_a_window_exactly_90_percent_ascii_is_judged() -> None:
    assert max_char_entropy("abcdefghi\u00e9", 10) == math.log2(10)
    assert max_char_entropy("abcdefgh\u00e9\u00e8", 10) == 0.0  # 80%


def test_char_entropy_fires_only_past_the_threshold() -> None:
    t = Thresholds(entropy_window=8, char_entropy=3.0)
    assert "char_entropy" not in found("abcdefgh", t)
    assert found("abcdefgh", Thresholds(entropy_window=8, char_entropy=2.99))[
        "char_entropy"] == 3.0


# --- scripts ----------------------------------------------------------------------------

def test_fullwidth_and_halfwidth_letters_belong_to_their_script() -> None:
    assert mixed_script_words("ａб") == (1.0, 1)  # fullwidth Latin with Cyrillic
    assert mixed_script_words("ｱб") == (1.0, 1)  # halfwidth katakana with Cyrillic
    assert mixed_script_words("ｈｅｌｌｏ 世界") == (0.0, 2)
    assert word_salad("ｌｏｒｅｍ ｉｐｓｕｍ", 2, 2) == (1.0, 2)  # fullwidth Latin is Latin


def test_letters_of_no_script_and_scripts_that_mix_are_not_mixing() -> None:
    assert mixed_script_words("10 µm of ªb") == (0.0, 3)
    assert mixed_script_words("漢字とかなとカタカナと한국어") == (0.0, 1)
    assert mixed_script_words("ΔG iPhone用") == (0.0, 2)


def test_three_scripts_in_a_word_always_mix() -> None:
    assert mixed_script_words("aбα") == (1.0, 1)
    assert mixed_script_words("ΔG中") == (1.0, 1)  # each pair mixes, not all three


def test_mixed_script_fires_only_past_the_threshold() -> None:
    words = ["aб"] * 2 + ["word"] * 18  # 2 of 20: exactly 0.1
    assert mixed_script_words(" ".join(words)) == (0.1, 20)
    assert "mixed_script" not in found(" ".join(words))
    words = ["aб"] * 3 + ["word"] * 17
    assert found(" ".join(words))["mixed_script"] == 0.15


def test_entropy_judges_the_last_characters_past_the_half_window_steps() -> None:
    # Windows of 8 start every 4 characters: 0 and 4 cover "a" x 12; only a final window
    # (start 7) reaches the noise at the end. Red before: the tail was never judged (0.0).
    text = "a" * 12 + "bcd"
    expected = -(5 / 8 * math.log2(5 / 8) + 3 * (1 / 8 * math.log2(1 / 8)))
    assert max_char_entropy(text, 8) == pytest.approx(expected)
    # A text whose steps end exactly at its end adds no window (and none is counted twice).
    assert max_char_entropy("a" * 12 + "bcdb", 8) == max_char_entropy("aaaabcdb", 8)


def test_a_single_repeated_character_has_no_entropy_however_the_windows_fall() -> None:
    # Only whole windows are judged: a 9-character tail scored over a 10-character window
    # would read 0.9 * log2(10/9) = 0.137 bits for "aaaaaaaaa".
    assert max_char_entropy("a" * 19, 10) == 0.0
