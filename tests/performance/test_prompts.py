"""Prompt construction: seeded, shared-prefix structure, arrival schedules; token-exact
lengths with the served model's real tokenizer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rocm_llm.performance.prompts import Vocabulary, poisson_schedule, shared_prefix_prompts

TOY = Vocabulary(np.arange(10, 5000), path=None)  # type: ignore[arg-type]


@given(count=st.integers(1, 20), isl=st.integers(1, 3000), hit=st.floats(0, 0.95),
       seed=st.integers(0, 2**31))
def test_prompts_have_exact_length_and_shared_prefix(count, isl, hit, seed) -> None:
    prompts = shared_prefix_prompts(TOY, count, isl, hit, seed)
    shared = round(isl * hit)
    assert len(prompts) == count and all(len(p) == isl for p in prompts)
    assert all(p[:shared] == prompts[0][:shared] for p in prompts)
    assert prompts == shared_prefix_prompts(TOY, count, isl, hit, seed)  # seeded
    if count > 1 and isl - shared >= 8:
        assert prompts[0][shared:] != prompts[1][shared:]


def test_cache_hit_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError):
        shared_prefix_prompts(TOY, 2, 10, 1.0, 0)


@given(n=st.integers(1, 500), rate=st.floats(0.01, 50), seed=st.integers(0, 1000))
def test_schedule_is_increasing_and_ends_at_n_over_rate(n, rate, seed) -> None:
    times = poisson_schedule(n, rate, seed)
    assert len(times) == n
    assert all(b >= a for a, b in zip(times, times[1:], strict=False))
    assert times[-1] == pytest.approx(n / rate)
    assert times == poisson_schedule(n, rate, seed)


def test_schedule_gaps_look_exponential() -> None:
    gaps = np.diff([0.0, *poisson_schedule(4000, 2.0, 7)])
    # exponential: coefficient of variation ~1 (a fixed interval would give 0)
    assert 0.9 < gaps.std() / gaps.mean() < 1.1


@pytest.mark.engine
@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 4000), seed=st.integers(0, 2**31))
def test_real_tokenizer_ids_are_ordinary_tokens(reference_vocab, n, seed) -> None:
    ids = reference_vocab.sample(n, np.random.default_rng(seed))
    assert len(ids) == n
    special = {0, 1, 2}  # SmolLM2's <|endoftext|>, <|im_start|>, <|im_end|>
    assert not special & set(ids)


PASSAGES = tuple(f"Question: Tom has {i} apples and buys {i + 3} more. How many now?\n"
                 f"Answer: {i} + {i + 3} = {2 * i + 3}.\n#### {2 * i + 3}" for i in range(40))


def test_natural_text_prompts_are_token_exact_text(reference_vocab) -> None:
    """A spec-decode workload's prompts as natural text (issue 25 item 5): each exactly its
    length in the model's own tokens, a shared text prefix, seeded, and text when decoded."""
    from dataclasses import replace

    from pytest_rocm_llm.performance.prompts import load_tokenizer, workload_prompts

    vocab = replace(reference_vocab, passages=PASSAGES)
    prompts = workload_prompts(vocab, "gsm8k", 3, 700, 0.5, seed=52)
    assert [len(p) for p in prompts] == [700] * 3
    assert all(p[:350] == prompts[0][:350] for p in prompts) and prompts[1] != prompts[2]
    assert prompts == workload_prompts(vocab, "gsm8k", 3, 700, 0.5, seed=52)
    text = load_tokenizer(vocab.path).decode(prompts[1])
    assert text.count("Question: Tom has") >= 5 and "How many now?" in text
    # the random source is what it was: ids, not text
    random_ids = workload_prompts(vocab, "random", 3, 700, 0.5, seed=52)
    assert random_ids == shared_prefix_prompts(vocab, 3, 700, 0.5, 52)
    with pytest.raises(ValueError, match="no passages"):
        workload_prompts(reference_vocab, "gsm8k", 1, 10, 0.0, seed=0)
