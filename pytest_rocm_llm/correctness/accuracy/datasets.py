"""Evaluation data: from a directory the user gives, or fetched from the Hugging Face Hub;
checked by sha256 either way.

The project ships no benchmark data. GSM8K (MIT) is read from ``<data_dir>/gsm8k/`` when a
data directory is given (the offline override: then nothing is fetched); otherwise from
``openai/gsm8k`` on the Hub at a pinned commit, through huggingface_hub's cache (downloaded
on first use, HF_HUB_OFFLINE and HF_HUB_CACHE honoured). GPQA-Diamond (CC BY 4.0, whose
authors ask that its examples not be revealed in plain text online) is read from a CSV path
the user gives. The digest is of the bytes the items are built from, so both sources are
held to the same release; a missing or altered file stops the eval with
``DatasetUnavailable`` naming the file, what was expected and how to get it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pytest_rocm_llm.correctness.accuracy.hub import HubFile, fetch_rows_as_jsonl
from pytest_rocm_llm.errors import DatasetUnavailable


@dataclass(frozen=True)
class DataFile:
    relpath: str  # under the data directory
    sha256: str  # of the JSON lines, whichever source they come from
    lines: int | None
    source: str  # where to get it, and its licence
    hub: HubFile | None = None  # where it is fetched from when no data directory is given


@dataclass(frozen=True)
class Loaded:
    origin: str  # the file, or the Hub file and its cached copy, for messages
    text: str


GSM8K_SOURCE = ("https://github.com/openai/grade-school-math (grade_school_math/data/, MIT "
                "licence)")
# openai/gsm8k keeps each split as one parquet table under main/ (the "main" config; the
# other, socratic/, has different answers). The commit is one that public evaluation code
# pins and fetches main/*.parquet from with hf_hub_download. Its rows are taken to be the
# GitHub release's lines unchanged (the Hub copy was made by a loading script that yielded
# each line's question and answer as read): written back with json.dumps they are then the
# release's bytes, so the release's sha256 checks the Hub copy too. This project's machines
# reach no Hub, so that was not checked against the Hub itself; a Hub copy that differs is
# refused by the digest, never scored.
GSM8K_REVISION = "e53f048856ff4f594e959d75785d2c2d37b678ee"
GSM8K_TEST = DataFile(
    "gsm8k/test.jsonl", "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14",
    1319, GSM8K_SOURCE, HubFile("openai/gsm8k", GSM8K_REVISION,
                                "main/test-00000-of-00001.parquet", ("question", "answer")))
GSM8K_TRAIN = DataFile(
    "gsm8k/train.jsonl", "17f347dc51477c50d4efb83959dbb7c56297aba886e5544ee2aaed3024813465",
    7473, GSM8K_SOURCE, HubFile("openai/gsm8k", GSM8K_REVISION,
                                "main/train-00000-of-00001.parquet", ("question", "answer")))
GPQA_SOURCE = ("the GPQA authors' release, https://github.com/idavidrein/gpqa (CC BY 4.0; "
               "gpqa_diamond.csv inside the password-protected dataset.zip)")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _mismatch(what: str, origin: str, actual: str, expected: str, source: str) -> str:
    return (f"{what}: {origin} has sha256 {actual}, expected {expected.lower()} (a different "
            f"or altered copy; scores would not be comparable); get the release from {source}")


def verify(path: Path, sha256: str | None, what: str, source: str) -> Path:
    """``path`` if it exists and (when ``sha256`` is given) has that digest."""
    if not path.is_file():
        raise DatasetUnavailable(f"{what}: {path} is missing; get it from {source}")
    if sha256 is not None:
        actual = sha256_of(path)
        if actual != sha256.lower():
            raise DatasetUnavailable(_mismatch(what, str(path), actual, sha256, source))
    return path


def _override_hint(file: DataFile) -> str:
    return (f"--llm-data-dir DIR (ini llm_data_dir, env PYTEST_ROCM_LLM_DATA_DIR) with "
            f"DIR/{file.relpath} from {file.source}")


def read(data_dir: Path | None, file: DataFile, what: str) -> Loaded:
    """The file's text, checked by sha256: from ``data_dir`` when given, else from the Hub."""
    if data_dir is not None:
        path = Path(data_dir).expanduser() / file.relpath
        if not path.is_file():
            # The user chose this directory: fetching instead would hide the mistake.
            raise DatasetUnavailable(
                f"{what}: {path} is missing; get it from {file.source}, or unset "
                f"--llm-data-dir (ini llm_data_dir, env PYTEST_ROCM_LLM_DATA_DIR) to fetch it"
                + (f" from {file.hub.url}" if file.hub else ""))
        data = path.read_bytes()
        origin = str(path)
    elif file.hub is None:
        raise DatasetUnavailable(f"{what}: no data directory was given; pass "
                                 f"{_override_hint(file)}")
    else:
        origin, data = fetch_rows_as_jsonl(file.hub, what, _override_hint(file))
    actual = hashlib.sha256(data).hexdigest()
    if actual != file.sha256.lower():
        raise DatasetUnavailable(_mismatch(what, origin, actual, file.sha256, file.source))
    return Loaded(origin, data.decode("utf-8"))
