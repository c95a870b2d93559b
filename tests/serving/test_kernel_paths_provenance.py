"""Kernel paths as evidence: a measured entry's provenance carries the kernel paths its
server's log shows (read once per server), the baseline schema accepts entries with and
without them, and a path that changed since the baseline is a note, never a verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rocm_llm.config.checks import Gate
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.report.table import render
from pytest_rocm_llm.serving.kernel_paths import kernel_path_note, kernel_paths
from pytest_rocm_llm.verdicts.baselines import BaselineEntry, apply_updates, load, validate
from pytest_rocm_llm.verdicts.gate import Measurement
from pytest_rocm_llm.verdicts.provenance import collect
from pytest_rocm_llm.verdicts.verdict import CheckSpec, Verdict, baseline_entry, decide

CPU_LOG = Path(__file__).parents[1] / "data" / "sglang-0.5.23-cpu-smollm2.log"
SPEC = CheckSpec("gsm8k_accuracy", "accuracy", "", 0.5, None, "published", Gate("floor"))
AITER = {"attention_prefill_backend": "aiter", "attention_decode_backend": "aiter",
         "moe_runner_backend": "aiter", "moe_kernels": ["aiter"], "all_reduce": "aiter-custom",
         "tuned_config_hits": 40, "tuned_config_misses": 0}


def provenance(tmp_path: Path, log_path: Path | None) -> dict:
    return collect(engine="sglang", engine_version="0.5.23", profile_argv=["--tp-size", "1"],
                   model="m", launch_argv=["python", "-m", "sglang.launch_server"],
                   suite_dir=tmp_path, container_image=None, local=False, log_path=log_path)


def test_a_recorded_server_log_becomes_provenance(tmp_path: Path) -> None:
    log = tmp_path / "smoke-reference-30001.log"
    log.write_text(CPU_LOG.read_text())
    paths = provenance(tmp_path, log)["kernel_paths"]
    assert paths == kernel_paths(CPU_LOG.read_text())
    assert paths["attention_decode_backend"] == "torch_native" and paths["all_reduce"] == "none"


def test_each_server_log_is_read_once(tmp_path: Path) -> None:
    # The first verdict of a profile fixes the evidence; later verdicts of the same server
    # do not re-read a log that may be gigabytes by then.
    log = tmp_path / "glm52-throughput-30002.log"
    log.write_text(CPU_LOG.read_text())
    first = provenance(tmp_path, log)["kernel_paths"]
    with log.open("a") as fh:
        fh.write("[2026-11-30 10:00:00 TP0] [AR] All-reduce call path: NCCL\n")
    assert provenance(tmp_path, log)["kernel_paths"] == first
    other = tmp_path / "glm52-throughput-30003.log"  # another server (a relaunch: new port)
    other.write_text(log.read_text())
    assert provenance(tmp_path, other)["kernel_paths"]["all_reduce"] == "nccl"


def test_an_attached_server_records_no_kernel_paths(tmp_path: Path) -> None:
    assert provenance(tmp_path, None)["kernel_paths"] is None
    assert provenance(tmp_path, tmp_path / "gone.log")["kernel_paths"] is None


def document(prov: dict) -> dict:
    return {"schema_version": 1, "suite": "smoke", "target": "cpu", "metrics": {
        "gsm8k_accuracy": baseline_entry(SPEC, Measurement(0.6, 50, 0.07), "reference", prov)}}


def test_schema_accepts_entries_with_and_without_kernel_paths(tmp_path: Path) -> None:
    old = {"kind": "measured", "date": "2026-11-29", "engine": "sglang", "host": "h"}
    validate(tmp_path / "old.json", document(old))
    validate(tmp_path / "none.json", document({**old, "kernel_paths": None}))
    path = tmp_path / "cpu" / "smoke.json"
    new = provenance(tmp_path, CPU_LOG)
    apply_updates(path, "smoke", "cpu",
                  {"gsm8k_accuracy": document(new)["metrics"]["gsm8k_accuracy"]})
    stored = load(path)
    assert stored is not None
    assert stored.entries["gsm8k_accuracy"].provenance["kernel_paths"] == new["kernel_paths"]


@pytest.mark.parametrize("bad, field", [
    ({**AITER, "tuned_config_misses": "twelve"}, "tuned_config_misses"),
    ({**AITER, "tuned_config_hits": -1}, "tuned_config_hits"),
    ({**AITER, "moe_kernels": "aiter"}, "moe_kernels"),
    ({**AITER, "moe_runner": "aiter"}, "kernel_paths"),  # a misspelt key is not evidence
])
def test_schema_rejects_malformed_kernel_paths(tmp_path: Path, bad: dict, field: str) -> None:
    prov = {"kind": "measured", "date": "2026-11-29", "kernel_paths": bad}
    with pytest.raises(ConfigError, match=field) as err:
        validate(tmp_path / "b.json", document(prov))
    assert "b.json" in str(err.value)


def test_a_changed_kernel_path_is_a_note_naming_old_and_new() -> None:
    run = {**AITER, "moe_runner_backend": "triton", "tuned_config_misses": 12}
    assert kernel_path_note({"kernel_paths": AITER}, {"kernel_paths": run}) == (
        "kernel path changed since the baseline: moe_runner_backend aiter -> triton; "
        "tuned-config misses 0 -> 12")


def test_moe_kernels_and_all_reduce_changes_are_named() -> None:
    run = {**AITER, "moe_kernels": ["aiter", "triton"], "all_reduce": "nccl"}
    assert kernel_path_note({"kernel_paths": AITER}, {"kernel_paths": run}) == (
        "kernel path changed since the baseline: moe_kernels aiter -> aiter, triton; "
        "all_reduce aiter-custom -> nccl")


@pytest.mark.parametrize("baseline, run", [
    (AITER, dict(AITER)),
    # The counts depend on which shapes ran before the first verdict: only starting or
    # stopping to hit (or miss) is a change of path.
    (AITER, {**AITER, "tuned_config_hits": 57}),
    ({**AITER, "tuned_config_misses": 3}, {**AITER, "tuned_config_misses": 4}),
    # What one side's log did not show is not evidence of a change.
    ({**AITER, "all_reduce": None}, AITER),
    ({k: v for k, v in AITER.items() if k != "moe_runner_backend"},
     {**AITER, "moe_runner_backend": "triton"}),
])
def test_no_note_when_the_paths_agree(baseline: dict, run: dict) -> None:
    assert kernel_path_note({"kernel_paths": baseline}, {"kernel_paths": run}) is None


@pytest.mark.parametrize("baseline, run", [
    ({"kind": "measured", "date": "2026-07-01"}, {"kernel_paths": AITER}),  # an older entry
    ({"kind": "published", "date": "2026-07-01", "kernel_paths": None}, {"kernel_paths": AITER}),
    ({"kernel_paths": AITER}, {"kernel_paths": None}),  # an attached server: no log
])
def test_no_note_without_evidence_on_both_sides(baseline: dict, run: dict) -> None:
    assert kernel_path_note(baseline, run) is None



# The verdict carries the note in its own field; verdicts.py gains it separately.
needs_notes = pytest.mark.skipif("notes" not in Verdict.__dataclass_fields__,
                                 reason="Verdict.notes (verdicts.py) is not there yet")
BASE = Verdict(suite="glm52", target="mi355x", profile="throughput", check="gsm8k_accuracy",
               feature="correctness", metric="accuracy", unit="", status="pass")


def judged(value: float, stored_paths: dict | None, run_paths: dict | None) -> Verdict:
    stored = baseline_entry(SPEC, Measurement(0.6, 50, 0.07), "throughput",
                            {"kind": "measured", "date": "2026-07-01",
                             "kernel_paths": stored_paths})
    run = {"kind": "measured", "date": "2026-12-01", "kernel_paths": run_paths}
    return decide(SPEC, Measurement(value, 50, 0.07), BASE,
                  BaselineEntry(SPEC.name, stored), "check", run, "b.json").verdict


@needs_notes
def test_a_verdict_notes_a_changed_path_and_keeps_its_status() -> None:
    run = {**AITER, "moe_runner_backend": "triton", "tuned_config_misses": 12}
    changed, same = judged(0.6, AITER, run), judged(0.6, AITER, AITER)
    assert changed.status == same.status == "pass" and not changed.message
    note = ("kernel path changed since the baseline: moe_runner_backend aiter -> triton; "
            "tuned-config misses 0 -> 12")
    assert changed.notes == (note,) and same.notes == ()
    assert judged(0.2, AITER, run).status == "fail"  # the numbers decide, with or without it
    assert Verdict.from_json(changed.to_json()) == changed  # results file, xdist transport
    assert f"  gsm8k_accuracy: note: {note}" in render([changed])
    assert not any("note:" in line for line in render([same]))
