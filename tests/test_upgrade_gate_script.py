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
    record = tmp_path / "calls"
    fake = tmp_path / "pytest"
    fake.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> {record}; echo >> {record}\n'
                    f'case "$1" in --llm-plan) exit {plan_exit};; esac\n')
    fake.chmod(0o755)
    # this test may itself run on GitHub Actions, whose own step summary must not leak in
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env.update({"BASELINE_IMAGE": "img:old", "CANDIDATE_IMAGE": "img:new",
                "PYTEST": str(fake), "OUT": str(tmp_path), "TARGET": "cpu", **extra})
    proc = subprocess.run([str(SCRIPT), "--llm-container-arg=--volume=/m:/m"], env=env,
                          capture_output=True, timeout=30)
    calls = [line.rstrip("|").split("|") for line in record.read_text().splitlines()]
    return proc.returncode, calls


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
