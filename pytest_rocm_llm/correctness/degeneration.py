"""Degeneration detectors for generated text: loops, repetition, byte garbage, word salad.

A model served wrong rarely crashes: past some context length it starts to repeat itself or
emits broken bytes (one engine degraded on long-context output in the GLM 5.2 / MI355X
work; vllm-project/recipes#857 degraded past ~25k tokens), or, with garbage logits, tokens
that are valid text but no language: word salad, scripts glued together, random
characters. These detectors judge an output on its own, without a reference answer. Each
is silent on short texts, where none of them can tell a failure from a coincidence.
"""

from __future__ import annotations

import math
import re
import unicodedata
import zlib
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple


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
    # Word salad (random tokens of a Latin-script vocabulary decode to real words and word
    # pieces): in running text (lines of >= ``salad_line_words`` words) every window of
    # ``salad_window`` Latin letter-only words is scored by its share of words that are
    # neither a listed function word nor seen before in the window. Natural language
    # repeats its function words (Zipf), so the share stays low: CPython's pydoc topics
    # reach 0.63, its stdlib source 0.75, the twelve other Latin-script languages of
    # tests/degeneration_corpus.py 0.80 (Finnish); 500 draws of 120 random SmolLM2 tokens
    # all scored 0.93 or more.
    word_salad: float = 0.9
    salad_window: int = 60
    salad_line_words: int = 8
    # Random characters: Shannon entropy (bits per character) of an ``entropy_window``-char
    # window that is >= 90% ASCII. pydoc prose reaches 4.93, the stdlib source 5.67 (the
    # base85 alphabet in base64.py); random printable ASCII scores 6.2 and more. Random
    # letters and digits (5.7-5.95) are let through: hashes and ids are healthy output.
    char_entropy: float = 5.9
    entropy_window: int = 256
    # Scripts glued together inside one word (random tokens of a multilingual vocabulary):
    # the share of words whose letters come from scripts that do not mix in healthy text
    # (Latin with CJK does, as Chinese and Japanese run English words in without spaces;
    # Latin with Greek does, as in ΔG). The test corpus (19 languages, code, a list of
    # greetings in 13 scripts) scores 0; random tokens with half of them from other
    # scripts score 0.16 and more, random letters of nine scripts 0.88 and more.
    mixed_script: float = 0.1
    mixed_script_min_words: int = 20
    # Real words of several scripts in a row, each word in one script (a multilingual
    # vocabulary's whole-word tokens drawn at random): in every window of ``switch_window``
    # bare words, the share of neighbouring words whose scripts differ and do not mix,
    # fired when the window also holds >= ``switch_scripts`` scripts. Words in quotes or
    # brackets are cited, not running text ('Russian "привет", Greek "γεια σας"' is a
    # healthy list), and two scripts alternating is a language with borrowed terms
    # (Hindi or Russian prose naming Python; two scripts alone are therefore never
    # judged). tests/degeneration_corpus.py scores 0, also with all its languages joined;
    # salads of its words from eight scripts scored 0.69 to 0.9.
    script_switching: float = 0.3
    switch_window: int = 30
    switch_scripts: int = 3


class Finding(NamedTuple):
    # compression_ratio | repeated_4gram | tail_loop | char_run | bad_chars | word_salad |
    # char_entropy | mixed_script | script_switching | blank
    detector: str
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
    return max(compression_ratio(data[s:s + window])
               for s in window_starts(len(data), window, window))


def window_starts(length: int, window: int, step: int) -> list[int]:
    """Where the ``window``-long windows of a ``length``-long text start: every ``step``,
    and the last window too, so the end (where loops live and an answer that falls apart
    ends) is always judged. None when the text is shorter than one window."""
    if length < window:
        return []
    starts = list(range(0, length - window + 1, step))
    if starts[-1] != length - window:
        starts.append(length - window)
    return starts


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


# Frequent function words of the Latin-script languages served models mostly write:
# English, French, German, Spanish, Italian, Portuguese, Dutch, Scandinavian, Polish, Czech,
# Slovak, Croatian/Serbian, Romanian, Hungarian, Turkish, Finnish, Indonesian/Malay,
# Vietnamese, Tagalog, Swahili. A Latin-script language not here still repeats its own
# function words within a window, which usually keeps it below the threshold (the test
# corpus's most inflected languages, Finnish and Turkish, reach 0.8 with theirs listed).
FUNCTION_WORDS = frozenset("""
the of and to a in is that for it as was with be by on not he i this are or his from at which
but have an they you were her she there been one all we their has would when if so no will
more can its what about into than them only other some could out do these also may then
le la les de des du un une et est en que qui dans pour pas sur au aux il elle ne se ce
der die das und ist nicht ein eine zu den von mit sich des auf für im dem auch es wir
el los las del y por con una su para al lo como más pero sus ya o este
di che è per non sono della gli nel si da ma
os as um uma não com mais do da dos das em na no ao
het een van dat op te zijn voor met er aan ook als bij
och att det som på är av för till inte har om ett jag og er til at af ikke
w nie z się że to jest jak co po za od ale dla czy są jego już tak tylko przez
je v s pro jsou by jeho sa že ako pre
u da su što kao
și în cu pe nu că care mai din pentru sunt fost ca
az és hogy nem egy van meg csak volt ez azt
ve bir bu için ile çok daha ne gibi olarak olan sonra kadar ama her
ja on ei että oli hän kun niin mutta myös joka ovat tai kuin jos
dan yang ke dari ini itu dengan untuk tidak ada dalam akan pada juga atau oleh
và của là có không các những một được trong cho này người với đã để khi thì cũng như ở
ang ng sa mga ay ito hindi
ya wa kwa za ni katika hii cha
""".split())
_LETTERS = re.compile(r"[^\W\d_]+")


def word_salad(text: str, window: int, line_words: int) -> tuple[float, int]:
    """(worst window's share of new non-function words, running-text words judged).
    Latin-script words only: the function words listed are Latin-script ones, and other
    scripts' garbage is the mixed-script detector's."""
    words = [w.lower() for line in text.splitlines() if len(line.split()) >= line_words
             for w in line.split() if _LETTERS.fullmatch(w) and _latin(w)]
    if window < 1 or len(words) < window:
        return 0.0, len(words)
    worst = 0.0
    for start in window_starts(len(words), window, max(1, window // 2)):
        seen: set[str] = set()
        new = 0
        for w in words[start:start + window]:
            new += w not in seen and w not in FUNCTION_WORDS
            seen.add(w)
        worst = max(worst, new / window)
    return worst, len(words)


def max_char_entropy(text: str, window: int) -> float:
    """Highest Shannon entropy (bits/char) over ``window``-char windows that are >= 90%
    ASCII (CJK text has thousands of characters: its entropy says nothing)."""
    worst = 0.0
    for start in window_starts(len(text), window, max(1, window // 2)):
        seg = text[start:start + window]
        if sum(c.isascii() for c in seg) < 0.9 * window:
            continue
        counts = Counter(seg).values()
        worst = max(worst, -sum(c / window * math.log2(c / window) for c in counts))
    return worst


_SCRIPTS = frozenset(
    "LATIN GREEK CYRILLIC ARMENIAN HEBREW ARABIC SYRIAC THAANA DEVANAGARI BENGALI GURMUKHI "
    "GUJARATI ORIYA TAMIL TELUGU KANNADA MALAYALAM SINHALA THAI LAO TIBETAN MYANMAR GEORGIAN "
    "ETHIOPIC KHMER MONGOLIAN CJK HIRAGANA KATAKANA HANGUL BOPOMOFO".split())
_SAME = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "HANGUL": "CJK", "BOPOMOFO": "CJK"}
_MIXES = ({"LATIN", "CJK"}, {"LATIN", "GREEK"})


def _script(ch: str) -> str | None:
    name = unicodedata.name(ch, "").split(" ")
    first = name[1] if name[0] in ("FULLWIDTH", "HALFWIDTH") and len(name) > 1 else name[0]
    return _SAME.get(first, first) if first in _SCRIPTS else None  # None: no script (µ, ª)


def _latin(word: str) -> bool:
    return all(_script(ch) == "LATIN" for ch in word)


def mixed_script_words(text: str) -> tuple[float, int]:
    """(share of words of >= 2 letters mixing scripts that do not mix, words)."""
    words = [w for w in _LETTERS.findall(text) if len(w) >= 2]
    mixed = 0
    for w in words:
        scripts = {s for s in map(_script, w) if s is not None}
        mixed += len(scripts) > 2 or (len(scripts) == 2 and scripts not in _MIXES)
    return (mixed / len(words) if words else 0.0), len(words)


_CITED = "\"'`«»“”„‘’()[]{}<>「」『』"


def _word_script(token: str) -> str | None:
    """The script of a whitespace-separated word's first scripted letter (CJK merged)."""
    for ch in token:
        if ch.isalpha() and (script := _script(ch)) is not None:
            return script
    return None


def _cited(token: str) -> bool:
    core = token.rstrip(".,;:!?")
    return bool(core) and (core[0] in _CITED or core[-1] in _CITED)


def script_switching(text: str, window: int, min_scripts: int) -> float:
    """Worst window's share of neighbouring bare words whose scripts differ and do not mix
    (see Thresholds.script_switching); 0 when no window holds ``min_scripts`` scripts."""
    scripts = [sc for tok in text.split()
               if not _cited(tok) and (sc := _word_script(tok)) is not None]
    if window < 2 or len(scripts) < window:
        return 0.0
    worst = 0.0
    for start in window_starts(len(scripts), window, max(1, window // 2)):
        seg = scripts[start:start + window]
        if len(set(seg)) < min_scripts:
            continue
        switches = sum(a != b and {a, b} not in _MIXES for a, b in pairwise(seg))
        worst = max(worst, switches / (window - 1))
    return worst


def detect(text: str, thresholds: Thresholds = Thresholds()) -> list[Finding]:
    """Every detector that fires on ``text``; an empty list means healthy."""
    t = thresholds
    sized = len(text.encode("utf-8", errors="replace")) >= t.min_bytes
    ratio = max_window_compression(text, t.window_bytes) if sized else 0.0
    frac, grams = repeated_ngram_fraction(text)
    repeats, _ = tail_loop(text, t.tail_min_block, t.tail_window)
    run = longest_char_run(text)
    bad = bad_chars(text)
    bad_rate = bad / len(text) if text else 0.0
    salad, judged = word_salad(text, t.salad_window, t.salad_line_words)
    entropy = max_char_entropy(text, t.entropy_window)
    share, words = mixed_script_words(text)
    switching = script_switching(text, t.switch_window, t.switch_scripts)
    # (detector, value, threshold, fired): each fires only on enough text to judge
    measured = (
        ("compression_ratio", ratio, t.compression_ratio,
         sized and ratio > t.compression_ratio),
        ("repeated_4gram", frac, t.repeated_4gram,
         grams >= t.min_4grams and frac > t.repeated_4gram),
        ("tail_loop", repeats, t.tail_repeats, repeats >= t.tail_repeats),
        ("char_run", run, t.max_char_run, run > t.max_char_run),
        ("bad_chars", bad_rate, t.bad_char_rate,
         bad >= t.bad_char_min_count and bad_rate > t.bad_char_rate),
        ("word_salad", salad, t.word_salad, judged >= t.salad_window and salad > t.word_salad),
        ("char_entropy", entropy, t.char_entropy, entropy > t.char_entropy),
        ("mixed_script", share, t.mixed_script,
         words >= t.mixed_script_min_words and share > t.mixed_script),
        ("script_switching", switching, t.script_switching, switching > t.script_switching),
        # Nothing but whitespace is no output at all, however long (an empty string is a
        # failed or cut request, judged elsewhere).
        ("blank", float(len(text)), 0.0, bool(text) and not text.strip()),
    )
    return [Finding(name, value, limit) for name, value, limit, fired in measured if fired]
