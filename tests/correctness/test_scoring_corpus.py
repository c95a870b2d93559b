"""The scoring corpus (tests/correctness/scoring_corpus.py) through the production scoring:
GSM8K's accuracy as lm-evaluation-harness scores it, GPQA's as simple-evals does, long
context as RULER does except where it is stated to be stricter (issue 23 items 6-8)."""

from __future__ import annotations

import re

import pytest

from pytest_rocm_llm.correctness.accuracy.items import LETTER, NUMBER, Item, score
from pytest_rocm_llm.correctness.long_context import score as long_context_score
from tests.correctness.scoring_corpus import DISTRACTORS, GPQA, GSM8K, LONG_CONTEXT


def item(gold: str, kind: str) -> Item:
    return Item(id="x", messages=({"role": "user", "content": "q"},), gold=gold,
                answer_format=kind)


def lm_eval_gsm8k(output: str) -> str:
    """lm-eval's gsm8k.yaml, written out independently: flexible-extract (regex, group_select
    -1, take_first) then exact_match's regexes_to_ignore."""
    matches = re.findall(r"(-?[$0-9.,]{2,})|(-?[0-9]+)", output)
    if not matches:
        return "[invalid]"
    pred = next((g for g in matches[-1] if g), "[invalid]")
    for pattern in (",", r"\$", r"(?s).*#### ", r"\.$"):
        pred = re.sub(pattern, "", pred)
    return pred


def simple_evals_gpqa(output: str) -> str | None:
    m = re.search(r"(?i)Answer\s*:\s*([A-D])", output)
    return m.group(1) if m else None


@pytest.mark.parametrize("case", GSM8K, ids=range(len(GSM8K)))
def test_gsm8k_accuracy_is_lm_evals_and_strict_reads_the_last_hashes(case) -> None:
    s = score(item(case.gold, NUMBER), case.output)
    assert (s.flexible == case.gold) is case.lm_eval
    assert (lm_eval_gsm8k(case.output) == case.gold) is case.lm_eval  # the labels are lm-eval's
    assert (s.strict == case.gold) is case.strict


@pytest.mark.parametrize("case", GPQA, ids=range(len(GPQA)))
def test_gpqa_accuracy_is_simple_evals(case) -> None:
    s = score(item(case.gold, LETTER), case.output)
    assert (s.strict == case.gold) is case.simple_evals
    assert (simple_evals_gpqa(case.output) == case.gold) is case.simple_evals


@pytest.mark.parametrize("case", LONG_CONTEXT, ids=range(len(LONG_CONTEXT)))
def test_long_context_scores_like_ruler_except_where_stated(case) -> None:
    assert (case.expected.lower() in case.output.lower()) is case.ruler
    assert long_context_score(case.expected, case.output, DISTRACTORS) is case.ours
    assert (case.ours != case.ruler) is case.stricter


def test_the_offsets_to_the_published_methods_are_zero() -> None:
    """What a floor from a published figure needs: the same outputs scored the same."""
    assert sum((score(item(c.gold, NUMBER), c.output).flexible == c.gold) != c.lm_eval
               for c in GSM8K) == 0
    assert sum((score(item(c.gold, LETTER), c.output).strict == c.gold) != c.simple_evals
               for c in GPQA) == 0
