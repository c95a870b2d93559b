"""GSM8K: grade-school math word problems, scored on the final number.

Scored items come from test.jsonl (ids are line indexes, stable across runs); few-shot
exemplars come from train.jsonl only, and any exemplar whose question also appears among
the test items is dropped, so a shot can never hand the model a scored answer. One seeded
set of shots is used for every item: every prompt then shares its prefix, which is what the
prefix cache of a serving engine sees in production-like eval traffic.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_rocm_llm.correctness.accuracy.datasets import (
    GSM8K_TEST,
    GSM8K_TRAIN,
    DataFile,
    DatasetUnavailable,
    read,
)
from pytest_rocm_llm.correctness.accuracy.items import NUMBER, Item, canonical_number

INSTRUCTION = ("Solve the following math problem step by step. At the end, write the final "
               "answer on its own line as \"#### <number>\".")


@dataclass(frozen=True)
class Problem:
    index: int  # line index in its file
    question: str
    answer: str  # the worked solution ending in "#### N"

    @property
    def gold(self) -> str:
        """The number after '####' in canonical form."""
        tail = self.answer.rsplit("####", 1)[-1]
        value = canonical_number(tail)
        if value is None:
            raise ValueError(f"no final answer after '####' in line {self.index}")
        return value

    @property
    def solution(self) -> str:
        """The worked solution without GSM8K's calculator annotations (<<3*4=12>>)."""
        body, _, tail = self.answer.rpartition("####")
        return re.sub(r"<<[^>]*>>", "", body).rstrip() + "\n#### " + tail.strip()


def load(data_dir: Path | None, file: DataFile, what: str) -> list[Problem]:
    """The file's problems; from ``data_dir`` when given, else fetched (see datasets.read)."""
    loaded = read(data_dir, file, what)
    problems = []
    for i, line in enumerate(loaded.text.split("\n")):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            problems.append(Problem(i, row["question"], row["answer"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise DatasetUnavailable(f"{what}: {loaded.origin} line {i + 1} is not a GSM8K "
                                     f"record ({type(exc).__name__})") from None
    return problems


def subset(n: int, limit: int | None, seed: int) -> list[int]:
    """Indexes of a seeded subset of size ``limit`` (all when None), in file order.
    A smaller limit with the same seed gives a subset of a larger one."""
    order = list(range(n))
    random.Random(f"subset:{seed}").shuffle(order)
    return sorted(order[:limit] if limit is not None else order)


def pick_shots(train: Sequence[Problem], k: int, seed: int,
               exclude_questions: set[str]) -> list[Problem]:
    pool = [p for p in train if p.question.strip() not in exclude_questions]
    if k > len(pool):
        raise ValueError(f"{k} shots requested, only {len(pool)} exemplars available")
    return random.Random(f"shots:{seed}").sample(pool, k)


def messages(question: str, shots: Sequence[Problem]) -> tuple[dict[str, str], ...]:
    turns: list[dict[str, str]] = []
    for shot in shots:
        turns.append({"role": "user", "content": f"{INSTRUCTION}\n\n{shot.question}"})
        turns.append({"role": "assistant", "content": shot.solution})
    turns.append({"role": "user", "content": f"{INSTRUCTION}\n\n{question}"})
    return tuple(turns)


def items_from(test: Sequence[Problem], train: Sequence[Problem], *, limit: int | None,
               shots: int, seed: int) -> list[Item]:
    chosen = [test[i] for i in subset(len(test), limit, seed)]
    # Exclude every test question, not only the chosen ones: a shot must never be a test item.
    excluded = {p.question.strip() for p in test}
    exemplars = pick_shots(train, shots, seed, excluded) if shots else []
    return [Item(id=f"test-{p.index}", messages=messages(p.question, exemplars), gold=p.gold,
                 answer_format=NUMBER) for p in chosen]


def build(data_dir: Path | None, *, limit: int | None, shots: int, seed: int) -> list[Item]:
    test = load(data_dir, GSM8K_TEST, "GSM8K test set")
    train = (load(data_dir, GSM8K_TRAIN, "GSM8K train set (few-shot exemplars)") if shots
             else [])
    return items_from(test, train, limit=limit, shots=shots, seed=seed)


def passages(data_dir: Path | None) -> list[str]:
    """The train set as natural text (question, then its worked solution), in file order:
    what a workload with ``prompts = "gsm8k"`` cuts its prompts from. Train only, so a
    serving run never primes the cache with a scored test item."""
    return [f"Question: {p.question}\nAnswer: {p.solution}"
            for p in load(data_dir, GSM8K_TRAIN, "GSM8K train set (natural-text prompts)")]
