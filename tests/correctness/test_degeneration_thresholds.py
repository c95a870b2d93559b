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
