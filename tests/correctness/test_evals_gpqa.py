"""GPQA-Diamond from a CSV the user provides: seeded choice shuffling, letter scoring, and
no question or answer text in anything the eval returns. The CSV is synthetic, written
here: the project holds no GPQA data."""

from __future__ import annotations

import asyncio
import csv
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_rocm_llm.client.chat import ChatAnswer
from pytest_rocm_llm.correctness.accuracy import gpqa
from pytest_rocm_llm.correctness.accuracy.datasets import sha256_of
from pytest_rocm_llm.correctness.accuracy.runner import run_accuracy
from pytest_rocm_llm.errors import DatasetUnavailable

SECRET = "zebracorn"  # marks every question and answer text in the synthetic CSV


def write_csv(path: Path, n: int = 12, columns: Sequence[str] = gpqa.COLUMNS) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[*columns, "Subdomain"])
        w.writeheader()
        for i in range(n):
            row = {"Question": f"{SECRET} question {i}: which option is right?",
                   "Correct Answer": f"{SECRET} right {i}",
                   "Incorrect Answer 1": f"{SECRET} wrong-a {i}",
                   "Incorrect Answer 2": f"{SECRET} wrong-b {i}",
                   "Incorrect Answer 3": f"{SECRET} wrong-c {i}",
                   "Record ID": f"rec{i:04d}", "Subdomain": "Physics"}
            w.writerow({k: v for k, v in row.items() if k in columns or k == "Subdomain"})
    return path


def option_letter(prompt: str, marker: str) -> str:
    line = next(ln for ln in prompt.splitlines() if marker in ln and ln[1:3] == ") ")
    return line[0]


def test_choices_are_shuffled_per_item_with_a_seed(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "gpqa_diamond.csv")
    items = gpqa.build(path, sha256_of(path), limit=None, seed=0)
    assert [i.id for i in items] == [f"rec{i:04d}" for i in range(12)]
    for item in items:
        prompt = item.messages[0]["content"]
        assert option_letter(prompt, "right") == item.gold
        assert "Answer: $LETTER" in prompt
    golds = [i.gold for i in items]
    assert len(set(golds)) > 1  # shuffled, not always A
    assert golds == [i.gold for i in gpqa.build(path, None, limit=None, seed=0)]
    assert golds != [i.gold for i in gpqa.build(path, None, limit=None, seed=1)]
    assert [i.id for i in gpqa.build(path, None, limit=5, seed=0)] == \
        [i.id for i in gpqa.build(path, None, limit=5, seed=0)]


def test_wrong_checksum_missing_file_and_missing_column(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "gpqa.csv")
    with pytest.raises(DatasetUnavailable, match="has sha256 .* expected 0{64}"):
        gpqa.build(path, "0" * 64, limit=None, seed=0)
    with pytest.raises(DatasetUnavailable, match="nope.csv is missing.*CC BY 4.0"):
        gpqa.build(tmp_path / "nope.csv", None, limit=None, seed=0)
    with pytest.raises(DatasetUnavailable, match="no CSV path"):
        gpqa.build(None, None, limit=None, seed=0)
    bad = write_csv(tmp_path / "bad.csv", columns=gpqa.COLUMNS[:-1])
    with pytest.raises(DatasetUnavailable, match="no column.*Record ID") as e:
        gpqa.build(bad, None, limit=None, seed=0)
    assert SECRET not in e.value.reason


def test_no_question_text_leaves_the_eval(tmp_path: Path) -> None:
    items = gpqa.build(write_csv(tmp_path / "g.csv"), None, limit=None, seed=0)
    assert all(SECRET not in repr(i) for i in items)

    async def sampler(messages):
        prompt = messages[0]["content"]
        n = int(prompt.split("question ")[1].split(":")[0])
        if n == 3:  # a failing request whose server error echoes the prompt
            return ChatAnswer("", None, None, f"HTTP 400: invalid input {prompt}")
        if n == 4:
            return ChatAnswer("", None, None, f"ReadError: {prompt}")
        # the model repeats the question and answers right for even items, wrong for odd
        letter = option_letter(prompt, "right") if n % 2 == 0 else \
            option_letter(prompt, "wrong-a")
        return ChatAnswer(f"{prompt}\nThinking...\nAnswer: {letter}", "stop", 20)

    lines: list[str] = []
    result = asyncio.run(run_accuracy(items, sampler, 3, lines.append, "gpqa", "gpqa",
                                      scoring="strict"))
    returned = json.dumps({"metrics": dict(result.metrics), "records": list(result.records),
                           "problems": list(result.problems),
                           "details": list(result.details), "progress": lines}, default=str)
    assert SECRET not in returned
    assert "HTTP 400" in returned and "ReadError" in returned
    assert result.metrics["failed_requests"] == 2 and result.metrics["n"] == 10
    assert result.metrics["correct"] == 5  # items 0, 2, 6, 8, 10 (4 failed)
    assert set(result.records[0]) <= {"id", "gold", "extracted", "correct", "strict",
                                      "flexible", "finish_reason", "completion_tokens",
                                      "reasoning_chars", "error"}
