"""ci/upgrade-gate.sh, the upgrade gate's recipe: the plan first (a failing plan stops it
before any server), then the paired run, both with both images and the caller's arguments.
pytest is replaced by a script that records its arguments, so the order and the arguments are
held in seconds; the real recipe through two CPU-reference images and a real docker daemon is
tests/serving/test_engine_upgrade_gate.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import ROOT

SCRIPT = ROOT / "ci" / "upgrade-gate.sh"


def run(tmp_path: Path, plan_exit: int, **extra: str) -> tuple[int, list[list[str]]]:
    code, calls, _ = run_full(tmp_path, plan_exit, **extra)
    return code, calls


def run_full(tmp_path: Path, plan_exit: int,
             **extra: str) -> tuple[int, list[list[str]], str]:
    """The recipe's exit status, its pytest calls and its stderr; ``extra`` names the
    images (INCUMBENT_IMAGE=img:old by default; an empty value removes a variable)."""
    record = tmp_path / "calls"
    fake = tmp_path / "pytest"
    fake.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> {record}; echo >> {record}\n'
                    f'case "$1" in --llm-plan) exit {plan_exit};; esac\n')
    fake.chmod(0o755)
    # this test may itself run on GitHub Actions, whose own step summary must not leak in
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env = {k: v for k, v in env.items() if k not in ("INCUMBENT_IMAGE", "BASELINE_IMAGE")}
    env.update({"INCUMBENT_IMAGE": "img:old", "CANDIDATE_IMAGE": "img:new",
                "PYTEST": str(fake), "OUT": str(tmp_path), "TARGET": "cpu", **extra})
    env = {k: v for k, v in env.items() if v}
    proc = subprocess.run([str(SCRIPT), "--llm-container-arg=--volume=/m:/m"], env=env,
                          capture_output=True, timeout=30)
    lines = record.read_text().splitlines() if record.exists() else []
    calls = [line.rstrip("|").split("|") for line in lines]
    return proc.returncode, calls, proc.stderr.decode()


def test_the_plan_runs_first_then_the_paired_run_with_both_images(tmp_path: Path) -> None:
    code, calls = run(tmp_path, 0)
    assert code == 0 and len(calls) == 2
    plan, paired = calls
    assert plan[0] == "--llm-plan"
    for call in calls:
        assert " ".join(call).count("--llm-engine-image img:old --llm-candidate-image "
                                    "img:new --llm-container-arg=--volume=/m:/m") == 1
    assert "--llm-inconclusive=fail" in paired
    assert f"{tmp_path}/results.json" in paired
    assert paired[paired.index("--llm-summary") + 1] == f"{tmp_path}/summary.md"


def test_on_github_the_summary_goes_to_the_job_page(tmp_path: Path) -> None:
    page = tmp_path / "step-summary"
    _, (plan, paired) = run(tmp_path, 0, GITHUB_STEP_SUMMARY=str(page))
    assert paired[paired.index("--llm-summary") + 1] == str(page)
    assert "--llm-summary" not in plan  # the plan's own output is its exit status


def test_a_failing_plan_stops_the_recipe(tmp_path: Path) -> None:
    code, calls = run(tmp_path, 12)
    assert code == 12 and len(calls) == 1


def test_the_old_name_of_the_incumbent_image_is_still_read_and_named(tmp_path: Path) -> None:
    code, calls, err = run_full(tmp_path, 0, INCUMBENT_IMAGE="", BASELINE_IMAGE="img:old")
    assert code == 0 and len(calls) == 2
    assert all("--llm-engine-image img:old" in " ".join(call) for call in calls)
    assert "BASELINE_IMAGE is the old name of INCUMBENT_IMAGE" in err


def test_without_the_incumbent_image_nothing_runs(tmp_path: Path) -> None:
    code, calls, err = run_full(tmp_path, 0, INCUMBENT_IMAGE="")
    assert code != 0 and calls == []
    assert "set INCUMBENT_IMAGE to the build in use" in err
