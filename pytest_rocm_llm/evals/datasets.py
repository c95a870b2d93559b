"""Datasets the user provides: found under a data directory, checked by sha256.

The project ships no benchmark data. GSM8K (MIT) is read from ``<data_dir>/gsm8k/``;
GPQA-Diamond (CC BY 4.0, whose authors ask that its examples not be revealed in plain text
online) is read from a CSV path the user gives. A missing or altered file stops the eval
with ``DatasetUnavailable`` naming the file, what was expected and where to get it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


class DatasetUnavailable(Exception):
    """A dataset file is missing or is not the expected release; ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class DataFile:
    relpath: str  # under the data directory
    sha256: str
    lines: int | None
    source: str  # where to get it, and its licence


GSM8K_SOURCE = ("https://github.com/openai/grade-school-math (grade_school_math/data/, MIT "
                "licence)")
GSM8K_TEST = DataFile(
    "gsm8k/test.jsonl", "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14",
    1319, GSM8K_SOURCE)
GSM8K_TRAIN = DataFile(
    "gsm8k/train.jsonl", "17f347dc51477c50d4efb83959dbb7c56297aba886e5544ee2aaed3024813465",
    7473, GSM8K_SOURCE)
GPQA_SOURCE = ("the GPQA authors' release, https://github.com/idavidrein/gpqa (CC BY 4.0; "
               "gpqa_diamond.csv inside the password-protected dataset.zip)")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, sha256: str | None, what: str, source: str) -> Path:
    """``path`` if it exists and (when ``sha256`` is given) has that digest."""
    if not path.is_file():
        raise DatasetUnavailable(f"{what}: {path} is missing; get it from {source}")
    if sha256 is not None:
        actual = sha256_of(path)
        if actual != sha256.lower():
            raise DatasetUnavailable(
                f"{what}: {path} has sha256 {actual}, expected {sha256.lower()} (a different "
                f"or altered copy; scores would not be comparable); get the release from "
                f"{source}")
    return path


def resolve(data_dir: Path | None, file: DataFile, what: str) -> Path:
    if data_dir is None:
        raise DatasetUnavailable(
            f"{what}: no data directory was given; it is read from <data_dir>/{file.relpath} "
            f"(get it from {file.source})")
    return verify(Path(data_dir).expanduser() / file.relpath, file.sha256, what, file.source)
