"""Degeneration detectors for generated text: loops, repetition and byte garbage.

A model served wrong rarely crashes: past some context length it starts to repeat itself or
emits broken bytes (one engine degraded on long-context output in the GLM 5.2 / MI355X
work; vllm-project/recipes#857 degraded past ~25k tokens). These detectors judge an output
on its own, without a reference answer. Each is silent on short texts, where none of them
can tell a loop from a coincidence.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Thresholds:
    # Whisper's compression_ratio_threshold (openai/whisper, transcribe.py) is 2.4 on
    # speech transcripts; source code and technical text routinely exceed it. Measured here
    # with whitespace runs collapsed, per window of ``window_bytes`` (a long healthy output
    # must not be judged by zlib's growing dictionary): windows of CPython's stdlib source
    # reach 4.45 and of its pydoc topics 2.83, while a 1 KiB loop scores 13 and more.
    compression_ratio: float = 5.0
    window_bytes: int = 1024
    min_bytes: int = 128
    # seq-rep-4 of Welleck et al. 2019 ("Neural text generation with unlikelihood
    # training"): 1 - unique/total word 4-grams; human Wikitext ~0.01, greedy GPT-2 ~0.4.
    # 0.5 leaves room for repetitive but healthy code and lists.
    repeated_4gram: float = 0.5
    min_4grams: int = 40
    # The last ``tail_repeats * tail_min_block`` characters (or more) are one block of at
    # least ``tail_min_block`` characters over and over: the output ended inside a loop.
    tail_repeats: float = 3.0
    tail_min_block: int = 16
    tail_window: int = 6000
    # A run of one non-space character: separator rules in code and Markdown stay within
    # ~120; a model stuck on one token ("!!!!...") goes far past.
    max_char_run: int = 256
    # U+FFFD (bytes that did not decode) and control characters other than \t \n \r:
    # a tokenizer/detokenizer mismatch or garbage logits. One U+FFFD at the very end is
    # normal (output cut inside a multi-byte character), hence the minimum count.
    bad_char_rate: float = 0.01
    bad_char_min_count: int = 3


@dataclass(frozen=True)
class Finding:
    detector: str  # compression_ratio | repeated_4gram | tail_loop | char_run | bad_chars
    value: float
    threshold: float

    def __str__(self) -> str:
        return f"{self.detector} {self.value:.3g} (threshold {self.threshold:g})"


def compression_ratio(data: bytes) -> float:
    """len(bytes) / len(zlib.compress(bytes)), as Whisper computes it."""
    return len(data) / len(zlib.compress(data)) if data else 0.0


_SPACE = re.compile(r"\s+")
_RUN = re.compile(r"(\S)\1{3,}")


def max_window_compression(text: str, window: int) -> float:
    """The highest compression ratio over ``window``-byte windows of ``text`` with
    whitespace runs and runs of one character collapsed (indentation and ``-----`` rules
    compress well without being loops; single-character loops are the tail detector's)."""
    text = _RUN.sub(r"\1\1\1", _SPACE.sub(" ", text))
    data = text.encode("utf-8", errors="replace")
    if len(data) <= 2 * window:
        return compression_ratio(data)
    starts = range(0, len(data) - window + 1, window)
    ratios = [compression_ratio(data[s:s + window]) for s in starts]
    if len(data) % window:
        ratios.append(compression_ratio(data[-window:]))  # the tail, where loops live
    return max(ratios)


_WORD = re.compile(r"\S+")


def repeated_ngram_fraction(text: str, n: int = 4) -> tuple[float, int]:
    """(1 - unique / total word n-grams, total); (0, total) when there are none."""
    words = _WORD.findall(text)
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        return 0.0, 0
    return 1.0 - len(set(grams)) / len(grams), len(grams)


def tail_loop(text: str, min_block: int, window: int) -> tuple[float, int]:
    """(repeats, period) of the shortest block of >= ``min_block`` chars that the end of
    ``text`` is periodic in; (0, 0) if none repeats 3 times. A loop cut mid-block counts."""
    tail = text.rstrip()[-window:]
    n = len(tail)
    for p in range(min_block, n // 3 + 1):
        # the last 3p characters have period p
        # (a run of one character, like a '#####' rule in code, is the char_run detector's)
        if tail[n - 2 * p:] == tail[n - 3 * p:n - p] and len(set(tail[n - p:])) > 1:
            start = n - 3 * p
            while start > 0 and tail[start - 1] == tail[start - 1 + p]:
                start -= 1
            return (n - start) / p, p
    return 0.0, 0


_CHAR_RUN = re.compile(r"(\S)\1*")


def longest_char_run(text: str) -> int:
    return max((m.end() - m.start() for m in _CHAR_RUN.finditer(text)), default=0)


def bad_chars(text: str) -> int:
    return sum(1 for ch in text if ch == "\ufffd" or (
        unicodedata.category(ch) == "Cc" and ch not in "\t\n\r"))


def detect(text: str, thresholds: Thresholds = Thresholds()) -> list[Finding]:
    """Every detector that fires on ``text``; an empty list means healthy."""
    t = thresholds
    found: list[Finding] = []
    if len(text.encode("utf-8", errors="replace")) >= t.min_bytes:
        ratio = max_window_compression(text, t.window_bytes)
        if ratio > t.compression_ratio:
            found.append(Finding("compression_ratio", ratio, t.compression_ratio))
    frac, total = repeated_ngram_fraction(text)
    if total >= t.min_4grams and frac > t.repeated_4gram:
        found.append(Finding("repeated_4gram", frac, t.repeated_4gram))
    repeats, _ = tail_loop(text, t.tail_min_block, t.tail_window)
    if repeats >= t.tail_repeats:
        found.append(Finding("tail_loop", repeats, t.tail_repeats))
    run = longest_char_run(text)
    if run > t.max_char_run:
        found.append(Finding("char_run", run, t.max_char_run))
    bad = bad_chars(text)
    if text and bad >= t.bad_char_min_count and bad / len(text) > t.bad_char_rate:
        found.append(Finding("bad_chars", bad / len(text), t.bad_char_rate))
    return found
