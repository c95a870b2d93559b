"""The parity prompt sets: seeded random-id prompts cover their whole length range, and the
Hypothesis strategy draws from a vocabulary object's ids as well as from a plain list."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rocm_llm.correctness.parity import natural_prompts, parity_prompts, random_id_prompts

IDS = list(range(1000, 1050))


def test_random_id_prompts_span_8_to_64_ids_inclusive() -> None:
    prompts = random_id_prompts(IDS, 600, seed=1)
    lengths = [len(p) for _, p in prompts]
    assert (min(lengths), max(lengths)) == (8, 64)
    assert [pid for pid, _ in prompts[:3]] == ["random-0", "random-1", "random-2"]
    assert all(isinstance(i, int) and i in IDS for _, p in prompts for i in p)


def test_random_id_prompts_honour_explicit_bounds() -> None:
    lengths = {len(p) for _, p in random_id_prompts(IDS, 200, seed=2, min_len=3, max_len=4)}
    assert lengths == {3, 4}


@settings(max_examples=30, derandomize=True, database=None)
@given(st.data())
def test_the_strategy_reads_a_vocabularys_ids(data: st.DataObject) -> None:
    vocab = SimpleNamespace(ids=[7, 8, 9])  # what prompts.Vocabulary offers: .ids
    prompt = data.draw(parity_prompts(vocab))
    assert 1 <= len(prompt) <= 48 and set(prompt) <= {7, 8, 9}


def test_the_strategy_defaults_reach_1_id_and_stay_within_48() -> None:
    lengths: set[int] = set()

    @settings(max_examples=300, derandomize=True, database=None)
    @given(parity_prompts([1, 2]))
    def collect(prompt: list[int]) -> None:
        lengths.add(len(prompt))

    collect()
    assert min(lengths) == 1 and max(lengths) <= 48


def test_the_natural_prompt_set_is_pinned(reference_model_dir: Path) -> None:
    """Parity baselines were judged on exactly these prompts (the built-in ones, then
    seeded pairs of them): a change here is a new prompt set; record the new digest."""
    prompts = natural_prompts(str(reference_model_dir / "tokenizer.json"), 20, seed=0)
    assert hashlib.sha256(json.dumps(prompts).encode()).hexdigest()[:16] == "20dbc36dfcb31b9e"
