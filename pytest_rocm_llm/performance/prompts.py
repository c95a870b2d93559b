"""Token-exact, seeded prompts built with the served model's own tokenizer.

Prompts are token-id lists sent as ids (``input_ids`` / a token-list ``prompt``), so the
server sees exactly the length asked for. Ids are drawn from the model's ordinary vocabulary
(special and added tokens excluded), the way sglang's random-ids dataset does. The tokenizer
is read from ``tokenizer.json`` in the model directory, never from a hub.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from pytest_rocm_llm.client.tokenizer import (  # noqa: F401 (TokenizerUnavailable: its old home)
    TokenizerUnavailable,
    load_tokenizer,
    tokenizer_file,
)


@dataclass(frozen=True)
class Vocabulary:
    """The ids a prompt may use; ``passages``: natural text a workload's prompts are cut
    from instead (set by the runner for a workload with a text prompt source)."""

    ids: np.ndarray
    path: Path
    passages: tuple[str, ...] = ()

    def sample(self, n: int, rng: np.random.Generator) -> list[int]:
        return rng.choice(self.ids, size=n, replace=True).tolist()


@lru_cache(maxsize=4)
def load_vocabulary(model_dir: str) -> Vocabulary:
    path = tokenizer_file(model_dir)
    tok = load_tokenizer(path)
    data = json.loads(path.read_text())
    special = {t["id"] for t in data.get("added_tokens", [])}
    ids = np.array([i for i in range(tok.get_vocab_size(with_added_tokens=False))
                    if i not in special], dtype=np.int64)
    if ids.size == 0:
        raise TokenizerUnavailable(f"{path}: empty vocabulary")
    return Vocabulary(ids, path)


def shared_prefix_prompts(vocab: Vocabulary, count: int, input_tokens: int,
                          cache_hit: float, seed: int) -> list[list[int]]:
    """``count`` prompts of exactly ``input_tokens`` ids. A ``cache_hit`` share of each is a
    prefix common to all of them, the rest is unique, so once the first has been served the
    prefix cache can serve that share of every later prompt."""
    if not 0.0 <= cache_hit < 1.0:
        raise ValueError(f"cache_hit must be in [0, 1), got {cache_hit}")
    rng = np.random.default_rng(seed)
    shared = round(input_tokens * cache_hit)
    prefix = vocab.sample(shared, rng)
    prompts = []
    for _ in range(count):
        prompts.append(prefix + vocab.sample(input_tokens - shared, rng))
    return prompts


def text_prompts(vocab: Vocabulary, count: int, input_tokens: int, cache_hit: float,
                 seed: int) -> list[list[int]]:
    """``count`` prompts of exactly ``input_tokens`` ids of natural text: seeded passages,
    each encoded with the model's tokenizer, joined until long enough and cut at the length.
    A ``cache_hit`` share of each is one common text prefix, as in shared_prefix_prompts."""
    if not vocab.passages:
        raise ValueError("no passages to cut natural-text prompts from")
    if not 0.0 <= cache_hit < 1.0:
        raise ValueError(f"cache_hit must be in [0, 1), got {cache_hit}")
    tok = load_tokenizer(vocab.path)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(vocab.passages))
    cursor = 0

    def take(n: int) -> list[int]:
        nonlocal cursor
        ids: list[int] = []
        while len(ids) < n:
            ids += tok.encode(vocab.passages[order[cursor % len(order)]] + "\n\n",
                              add_special_tokens=False).ids
            cursor += 1
        return ids[:n]

    shared = round(input_tokens * cache_hit)
    prefix = take(shared)
    return [prefix + take(input_tokens - shared) for _ in range(count)]


def workload_prompts(vocab: Vocabulary, source: str, count: int, input_tokens: int,
                     cache_hit: float, seed: int) -> list[list[int]]:
    """A workload's prompts from its ``prompts`` source (random ids or natural text)."""
    if source == "random":
        return shared_prefix_prompts(vocab, count, input_tokens, cache_hit, seed)
    return text_prompts(vocab, count, input_tokens, cache_hit, seed)


def poisson_schedule(count: int, rate: float, seed: int) -> list[float]:
    """Send times (s) of a seeded Poisson process at ``rate`` req/s, scaled so the last send
    falls at exactly ``count / rate``: over a short run the sample rate of an unscaled Poisson
    process strays far from its target (±1/sqrt(N)), which would make the achieved-rate
    precondition measure luck instead of whether the client kept up."""
    if count <= 0 or rate <= 0:
        raise ValueError("count and rate must be positive")
    if rate == float("inf"):
        return [0.0] * count  # a burst: everything at once
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, size=count)
    times = np.cumsum(gaps)
    return (times * (count / rate) / times[-1]).tolist()
