"""Long-context items and scoring beyond the exact-answer table of test_longcontext.py: a
loop is a loop whatever its sentences end with, and the item set is seeded per sample."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_rocm_llm.correctness.long_context import (
    LongContextConfig,
    _Encoder,
    build_item,
    build_items,
    score,
)


def test_looping_on_an_answer_is_wrong_whatever_its_sentences_end_with() -> None:
    assert not score("48213", " 48213 X. 48213 X. 48213 X.")
    assert score("48213", " 48213 X. 48213 X.")


def test_items_are_one_per_sample_seeded_by_the_suite_and_cycle_the_depths(
        reference_model_dir: Path) -> None:
    tok = str(reference_model_dir / "tokenizer.json")
    config = LongContextConfig("long", "long_context", None, (512,), ("passkey",), samples=4,
                               depths=(0.25, 0.75), seed=3)
    items = build_items(config, tok)
    assert [(i.sample, i.depth, i.length) for i in items] == [
        (0, 0.25, 512), (1, 0.75, 512), (2, 0.25, 512), (3, 0.75, 512)]
    assert len({i.answer for i in items}) == 4  # each sample its own pass key
    again = build_items(config, tok)
    assert [i.input_ids for i in again] == [i.input_ids for i in items]
    other = build_items(LongContextConfig("long", "long_context", None, (512,), ("passkey",),
                                          samples=4, depths=(0.25, 0.75), seed=4), tok)
    assert [i.answer for i in other] != [i.answer for i in items]


def test_the_prompt_set_is_pinned(reference_model_dir: Path) -> None:
    """Baselines were measured on exactly these prompts: instructions, needles, questions,
    filler and distractors. A change here is a new prompt set; record the new digest and
    re-measure the long-context baselines with it."""
    items = build_items(LongContextConfig("long", "long_context", None, (512,), samples=3),
                        str(reference_model_dir / "tokenizer.json"))
    blob = json.dumps([[i.task, i.sample, i.answer, list(i.distractors), list(i.input_ids)]
                       for i in items])
    assert hashlib.sha256(blob.encode()).hexdigest()[:16] == "ef28c89291589f2e"


def test_a_tokenizer_that_adds_a_bos_token_gets_it_once_at_the_start(tmp_path: Path) -> None:
    """The prompt is assembled from separately encoded pieces: only the whole prompt starts
    with the model's special prefix (SmolLM2 adds none, Llama-style tokenizers add BOS)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "<s>": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[
        ("<s>", 1)])
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    item = build_item(_Encoder(str(path)), "passkey", 400, 0, 0.5, seed=0)
    assert len(item.input_ids) == 400
    assert item.input_ids[0] == 1 and item.input_ids.count(1) == 1


def test_an_unknown_task_is_named(reference_model_dir: Path) -> None:
    enc = _Encoder(str(reference_model_dir / "tokenizer.json"))
    with pytest.raises(ValueError, match="^unknown task 'haystack'$"):
        build_item(enc, "haystack", 512, 0, 0.5, seed=0)
