"""Datasets: a local directory or the Hugging Face Hub's cache, both checked by sha256 on the
bytes used; missing data stops with how to get it; GSM8K shots never come from test items;
seeded subsets are stable; the synthetic arithmetic set is seeded and sound.

The Hub tests run the real resolution code (huggingface_hub's cache lookup included) in a
child process whose HF_HUB_CACHE is a directory laid out here as huggingface_hub lays out
its cache, with HF_HUB_OFFLINE=1 and an endpoint on a closed local port: nothing here can
reach the network.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_rocm_llm.correctness.accuracy import arithmetic, gsm8k
from pytest_rocm_llm.correctness.accuracy.datasets import (
    GSM8K_TEST,
    GSM8K_TRAIN,
    DataFile,
    read,
)
from pytest_rocm_llm.correctness.accuracy.hub import HubFile
from pytest_rocm_llm.correctness.accuracy.items import score
from pytest_rocm_llm.errors import DatasetUnavailable

# ROCM_LLM_DATA_DIR: the deprecated spelling, still what older CI scripts export
SHARED = Path(os.environ.get("PYTEST_ROCM_LLM_DATA_DIR") or os.environ.get("ROCM_LLM_DATA_DIR")
              or Path(__file__).resolve().parents[2] / ".." / "shared" / "data")
TINY_HUB = HubFile("tester/tiny-gsm8k", "0123456789abcdef0123456789abcdef01234567",
                   "main/test-00000-of-00001.parquet", ("question", "answer"))
# non-ASCII on purpose: the release writes it as \u escapes, and so must the conversion
ROWS = [("What is 1+1?", "1+1=<<1+1=2>>2\n#### 2"),
        ("Caf\u00e9 bill: 3\u20ac + 4\u20ac?", "#### 7")]


def jsonl(rows: list[tuple[str, str]]) -> bytes:
    return "".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in rows).encode()


def tiny_file(rows: list[tuple[str, str]]) -> DataFile:
    return DataFile("tiny/test.jsonl", hashlib.sha256(jsonl(rows)).hexdigest(), len(rows),
                    "the tester", TINY_HUB)


def write_gsm8k(root: Path, test: list[tuple[str, str]], train: list[tuple[str, str]]) -> Path:
    d = root / "gsm8k"
    d.mkdir(parents=True)
    (d / "test.jsonl").write_bytes(jsonl(test))
    (d / "train.jsonl").write_bytes(jsonl(train))
    return root


def parquet(rows: list[tuple[str, str]]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({"question": [q for q, _ in rows], "answer": [a for _, a in rows]}),
                   buf)
    return buf.getvalue()


def put_in_hub_cache(cache: Path, hub: HubFile, data: bytes) -> Path:
    """Where huggingface_hub keeps a downloaded file: the content under blobs/<sha256>, and a
    relative symlink to it at snapshots/<commit>/<filename>."""
    repo = cache / ("datasets--" + hub.repo.replace("/", "--"))
    blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    link = repo / "snapshots" / hub.revision / hub.filename
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(blob, link.parent))
    return link


def offline(hub_cache: Path, code: str) -> dict:
    """Run ``code`` (which sets ``out``) in a child process that only has ``hub_cache``;
    a DatasetUnavailable comes back as {"unavailable": reason}."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HF_", "HUGGINGFACE_", "ROCM_LLM_", "PYTEST_ROCM_LLM_"))}
    env.update(HF_HUB_CACHE=str(hub_cache), HF_HUB_OFFLINE="1",
               HF_ENDPOINT="http://127.0.0.1:9")
    script = ("import json\nfrom pytest_rocm_llm.correctness.accuracy.datasets import *\n"
              "from pytest_rocm_llm.correctness.accuracy import gsm8k\ntry:\n"
              + textwrap.indent(textwrap.dedent(code), "    ")
              + "\nexcept DatasetUnavailable as e:\n    out = {'unavailable': e.reason}\n"
              "print(json.dumps(out))\n")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120, cwd=hub_cache.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def read_tiny(rows: list[tuple[str, str]]) -> str:
    return (f"got = read(None, {tiny_file(rows)!r}, 'tiny set')\n"
            "out = {'origin': got.origin, 'text': got.text}")


def test_missing_file_names_the_file_and_the_source(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailable) as e:
        gsm8k.build(tmp_path, limit=None, shots=0, seed=0)
    assert str(tmp_path / "gsm8k" / "test.jsonl") in e.value.reason
    assert "is missing" in e.value.reason
    assert "github.com/openai/grade-school-math" in e.value.reason and "MIT" in e.value.reason
    # an explicit directory is the offline override: never silently replaced by a download
    assert "--llm-data-dir" in e.value.reason


def test_checksum_mismatch_names_both_digests(tmp_path: Path) -> None:
    write_gsm8k(tmp_path, [("What is 1+1?", "1+1=2\n#### 2")], [])
    with pytest.raises(DatasetUnavailable) as e:
        read(tmp_path, GSM8K_TEST, "GSM8K test set")
    assert "has sha256 " in e.value.reason and GSM8K_TEST.sha256 in e.value.reason
    assert str(tmp_path / "gsm8k" / "test.jsonl") in e.value.reason


def test_local_dir_file_is_read_when_its_digest_matches(tmp_path: Path) -> None:
    f = tiny_file(ROWS)
    (tmp_path / "tiny").mkdir()
    (tmp_path / f.relpath).write_bytes(jsonl(ROWS))
    got = read(tmp_path, f, "tiny set")
    assert got.text.encode() == jsonl(ROWS) and got.origin == str(tmp_path / f.relpath)


def test_gsm8k_is_pinned_to_one_hub_commit() -> None:
    for f in (GSM8K_TEST, GSM8K_TRAIN):
        assert f.hub is not None and f.hub.repo == "openai/gsm8k"
        assert len(f.hub.revision) == 40 and int(f.hub.revision, 16) >= 0
        assert f.hub.filename.startswith("main/") and f.hub.filename.endswith(".parquet")


def test_hub_cache_layout_serves_the_file_offline(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    link = put_in_hub_cache(cache, TINY_HUB, parquet(ROWS))
    out = offline(cache, read_tiny(ROWS))
    assert "unavailable" not in out, out
    assert out["text"].encode() == jsonl(ROWS)
    assert TINY_HUB.repo in out["origin"] and TINY_HUB.revision in out["origin"]
    assert str(link) in out["origin"]


def test_hub_file_with_other_content_is_refused_with_both_digests(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    altered = [ROWS[0], (ROWS[1][0], "#### 8")]
    put_in_hub_cache(cache, TINY_HUB, parquet(altered))
    out = offline(cache, read_tiny(ROWS))
    reason = out["unavailable"]
    assert tiny_file(ROWS).sha256 in reason
    assert hashlib.sha256(jsonl(altered)).hexdigest() in reason
    assert TINY_HUB.filename in reason and TINY_HUB.revision in reason


def test_no_data_and_offline_says_how_to_get_it(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    cache.mkdir()
    out = offline(cache, "gsm8k.build(None, limit=5, shots=0, seed=0)\nout = {}")
    reason = out["unavailable"]
    assert "GSM8K test set" in reason and "openai/gsm8k" in reason
    assert GSM8K_TEST.hub.revision in reason and GSM8K_TEST.hub.filename in reason
    assert "HF_HUB_OFFLINE" in reason and str(cache) in reason
    assert "--llm-data-dir" in reason and "gsm8k/test.jsonl" in reason


@pytest.mark.skipif(not (SHARED / "gsm8k" / "train.jsonl").is_file(),
                    reason="the project's shared GSM8K copy is not present")
def test_real_gsm8k_from_the_hub_cache_is_the_release(tmp_path: Path) -> None:
    """The Hub's parquet rows, written back as JSON lines, are byte for byte the release:
    the same sha256 checks both sources, and the items (ids, prompts, golds) are equal."""
    cache = tmp_path / "hub"
    for f in (GSM8K_TEST, GSM8K_TRAIN):
        rows = [(r["question"], r["answer"]) for r in map(json.loads, (SHARED / f.relpath)
                                                          .read_text().splitlines())]
        put_in_hub_cache(cache, f.hub, parquet(rows))
    out = offline(cache, "items = gsm8k.build(None, limit=None, shots=3, seed=0)\n"
                         "out = {'items': [[i.id, i.gold, list(i.messages)] for i in items]}")
    assert "unavailable" not in out, out
    local = gsm8k.build(SHARED, limit=None, shots=3, seed=0)
    assert out["items"] == [[i.id, i.gold, list(i.messages)] for i in local]
    assert len(out["items"]) == 1319


def test_loading_the_plugin_imports_no_hub_client() -> None:
    code = ("import sys, pytest_rocm_llm.plugin.hooks, pytest_rocm_llm.correctness.accuracy.gsm8k\n"
            "print(sorted(m for m in ('huggingface_hub', 'pyarrow') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


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



def test_gsm8k_from_the_hub_is_located_before_any_launch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No data directory: preflight looks the pinned Hub file up in the local cache, then
    once at the Hub (here on a closed local port), and says before launch what the eval
    would otherwise find only when its turn came, with the fix."""
    from types import SimpleNamespace

    from huggingface_hub import constants

    from pytest_rocm_llm.config.suite import parse_suite
    from pytest_rocm_llm.config.targets import TARGETS
    from pytest_rocm_llm.plugin.preflight import unjudgeable

    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    # not declared offline (an air-gapped node often is not), and no route to the Hub: one
    # quick look says so, instead of huggingface_hub's ~30 s of retries
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    suite = parse_suite(tmp_path / "suite.toml", {
        "suite": {"name": "s", "targets": ["cpu"]},
        "model": {"id": "org/m", "reference": "smollm2-135m-instruct"},
        "profiles": {"default": {}},
        "evals": {"gsm8k": {"kind": "gsm8k", "limit": 2, "shots": 0}},
        "checks": {"acc": {"eval": "gsm8k", "metric": "accuracy", "min": 0.1,
                           "source": "test"}}})
    settings = SimpleNamespace(data_dir=None, gpqa_csv=None, gpqa_sha256=None, endpoint=None,
                               engine_prefix=None, model_path=None)
    checks = [(suite, c) for c in suite.checks_for(TARGETS["cpu"])]
    lines = unjudgeable(checks, TARGETS["cpu"], settings)  # type: ignore[arg-type]
    assert len(lines) == 1 and lines[0].startswith("s/acc: GSM8K test set: ")
    assert "is not in the Hugging Face cache" in lines[0] and str(cache) in lines[0]
    assert "hf download openai/gsm8k" in lines[0] and "--llm-data-dir" in lines[0]
    assert "http://127.0.0.1:9 unreachable" in lines[0]
    # (a cached copy of the release is read with no network: test_real_gsm8k_from_the_hub_
    # cache_is_the_release, through the same gsm8k.build preflight calls)
