"""GPQA-Diamond from the user's copy of the official CSV, without ever revealing it.

The GPQA authors ask that examples not be revealed in plain text online, so question and
answer text stays inside the prompts sent to the server: items carry the record id and the
gold letter, and are marked confidential so the runner keeps server error text and model
output out of records, problems and details. The choices of each item are shuffled with a
seeded generator keyed by its record id (the same letters on every run and every machine).

The prompt and the "Answer: X" format follow openai/simple-evals (gpqa_eval.py,
QUERY_TEMPLATE_MULTICHOICE), zero-shot with reasoning.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

from pytest_rocm_llm.correctness.accuracy.datasets import GPQA_SOURCE, verify
from pytest_rocm_llm.correctness.accuracy.gsm8k import subset
from pytest_rocm_llm.correctness.accuracy.items import LETTER, Item
from pytest_rocm_llm.errors import DatasetUnavailable

LETTERS = "ABCD"
COLUMNS = ("Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2",
           "Incorrect Answer 3", "Record ID")

TEMPLATE = """Answer the following multiple choice question. The last line of your response \
should be of the following format: 'Answer: $LETTER' (without quotes) where LETTER is one of \
ABCD. Think step by step before answering.

{question}

A) {A}
B) {B}
C) {C}
D) {D}"""


def _rows(path: Path) -> list[dict[str, str]]:
    what = "GPQA-Diamond CSV"
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            # Names of the expected columns only: header cells of a wrong file may be data.
            raise DatasetUnavailable(f"{what}: {path} has no column(s) {', '.join(missing)}; "
                                     f"expected the official release from {GPQA_SOURCE}")
        rows = list(reader)
    if not rows:
        raise DatasetUnavailable(f"{what}: {path} has no rows")
    for n, row in enumerate(rows, start=2):
        if not all((row.get(c) or "").strip() for c in COLUMNS):
            raise DatasetUnavailable(f"{what}: {path} line {n} has an empty required cell")
    return rows


def build(csv_path: Path | None, sha256: str | None, *, limit: int | None,
          seed: int) -> list[Item]:
    if csv_path is None:
        raise DatasetUnavailable(f"GPQA-Diamond: no CSV path was given; get gpqa_diamond.csv "
                                 f"from {GPQA_SOURCE}")
    path = verify(Path(csv_path).expanduser(), sha256, "GPQA-Diamond CSV", GPQA_SOURCE)
    rows = _rows(path)
    items = []
    for i in subset(len(rows), limit, seed):
        row = rows[i]
        record = row["Record ID"].strip()
        choices = [row["Correct Answer"], row["Incorrect Answer 1"],
                   row["Incorrect Answer 2"], row["Incorrect Answer 3"]]
        order = list(range(4))
        random.Random(f"gpqa:{seed}:{record}").shuffle(order)
        shuffled = {LETTERS[pos]: choices[src].strip() for pos, src in enumerate(order)}
        gold = LETTERS[order.index(0)]
        prompt = TEMPLATE.format(question=row["Question"].strip(), **shuffled)
        items.append(Item(id=record, messages=({"role": "user", "content": prompt},),
                          gold=gold, answer_format=LETTER, confidential=True))
    return items
