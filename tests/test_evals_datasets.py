"""Datasets: checksums and missing files stop with a reason; GSM8K shots never come from
test items; seeded subsets are stable; the synthetic arithmetic set is seeded and sound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_rocm_llm.evals import arithmetic, gsm8k
from pytest_rocm_llm.evals.datasets import GSM8K_TEST, DatasetUnavailable, resolve
from pytest_rocm_llm.evals.items import score

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def write_gsm8k(root: Path, test: list[tuple[str, str]], train: list[tuple[str, str]]) -> Path:
    d = root / "gsm8k"
    d.mkdir(parents=True)
    for name, rows in (("test.jsonl", test), ("train.jsonl", train)):
        (d / name).write_text("".join(json.dumps({"question": q, "answer": a}) + "\n"
                                      for q, a in rows))
    return root


def test_missing_file_names_the_file_and_the_source(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailable) as e:
        gsm8k.build(tmp_path, limit=None, shots=0, seed=0)
    assert str(tmp_path / "gsm8k" / "test.jsonl") in e.value.reason
    assert "is missing" in e.value.reason
    assert "github.com/openai/grade-school-math" in e.value.reason and "MIT" in e.value.reason


def test_no_data_dir_says_where_the_file_is_read_from() -> None:
    with pytest.raises(DatasetUnavailable, match=r"no data directory.*<data_dir>/gsm8k/test"):
        gsm8k.build(None, limit=None, shots=0, seed=0)


def test_checksum_mismatch_names_both_digests(tmp_path: Path) -> None:
    write_gsm8k(tmp_path, [("What is 1+1?", "1+1=2\n#### 2")], [])
    with pytest.raises(DatasetUnavailable) as e:
        resolve(tmp_path, GSM8K_TEST, "GSM8K test set")
    assert "has sha256 " in e.value.reason and GSM8K_TEST.sha256 in e.value.reason
    assert str(tmp_path / "gsm8k" / "test.jsonl") in e.value.reason


def test_shots_never_come_from_test_items() -> None:
    test = [gsm8k.Problem(i, f"test question {i}", f"#### {i}") for i in range(20)]
    # the train file repeats some test questions: they must never be used as shots
    train = [gsm8k.Problem(i, f"test question {i}", f"#### {i}") for i in range(10)]
    train += [gsm8k.Problem(100 + i, f"train question {i}", f"x<<1+1=2>>2\n#### {i}")
              for i in range(6)]
    items = gsm8k.items_from(test, train, limit=None, shots=5, seed=3)
    shot_questions = {m["content"] for m in items[0].messages[:-1] if m["role"] == "user"}
    assert len(shot_questions) == 5
    assert all("train question" in q for q in shot_questions)
    # calculator annotations are stripped from the exemplar solutions
    assert all("<<" not in m["content"] for m in items[0].messages)
    with pytest.raises(ValueError, match="only 6 exemplars"):
        gsm8k.items_from(test, train, limit=None, shots=7, seed=3)


def test_seeded_subset_is_stable_and_nested() -> None:
    a = gsm8k.subset(1319, 50, seed=7)
    assert a == gsm8k.subset(1319, 50, seed=7) and len(set(a)) == 50 and a == sorted(a)
    assert set(gsm8k.subset(1319, 20, seed=7)) <= set(a)
    assert gsm8k.subset(1319, 50, seed=8) != a
    assert gsm8k.subset(5, None, seed=0) == [0, 1, 2, 3, 4]


@pytest.mark.skipif(not (SHARED / "gsm8k" / "test.jsonl").is_file(),
                    reason="the project's shared GSM8K copy is not present")
def test_real_gsm8k_loads_with_its_checksums() -> None:
    items = gsm8k.build(SHARED, limit=None, shots=3, seed=0)
    assert len(items) == 1319
    assert items[0].id == "test-0" and items[0].gold == "18"
    test_questions = {json.loads(line)["question"]
                      for line in (SHARED / "gsm8k" / "test.jsonl").read_text().splitlines()}
    assert len(items[0].messages) == 7
    for m in items[0].messages[:-1]:
        if m["role"] == "user":
            assert m["content"].split("\n\n", 1)[1] not in test_questions


def test_arithmetic_is_seeded_and_its_answers_are_right() -> None:
    a = arithmetic.generate(40, seed=1)
    assert [p.question for p in a] == [p.question for p in arithmetic.generate(40, seed=1)]
    assert [p.question for p in a] != [p.question for p in arithmetic.generate(40, seed=2)]
    assert len({p.question for p in a}) == 40
    for p in a:
        # the worked solution scores as correct through the GSM8K scoring path
        assert p.solution.endswith(f"#### {p.answer}") and p.answer >= 0
    items = arithmetic.build(count=10, shots=3, seed=1)
    assert len(items) == 10 and len({i.id for i in items}) == 10
    scored = {i.messages[-1]["content"] for i in items}
    shots = [m["content"] for m in items[0].messages[:-1] if m["role"] == "user"]
    assert len(shots) == 3 and not set(shots) & scored
    for item, p in zip(items, arithmetic.generate(10, seed=1), strict=True):
        s = score(item, p.solution)
        assert s.strict == s.flexible == item.gold == str(p.answer)
    one_step = arithmetic.generate(30, seed=1, max_steps=1)
    assert all(p.solution.count("\n") == 1 for p in one_step)
