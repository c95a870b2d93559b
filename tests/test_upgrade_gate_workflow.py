"""The workflow's "Which evaluations can run here" step, run as the runner runs it (bash, with
GITHUB_ENV and GITHUB_OUTPUT files): GPQA-Diamond is gated when the runner has its copy and
tau2 when tau2-bench is installed; otherwise each is deselected on purpose with a notice, and
the selection it writes leaves exactly those checks out of glm52 (collected for real)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "upgrade-gate.yml"


def step_script() -> str:
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["paired-gate"]["steps"]
    (step,) = [s for s in steps if s.get("id") == "evals"]
    return step["run"]


def run_step(tmp_path: Path, gpqa: str, tau2: bool) -> tuple[str, str, str]:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    if tau2:
        (bindir / "tau2").write_text("#!/bin/sh\n")
        (bindir / "tau2").chmod(0o755)
    out, env_file = tmp_path / "out", tmp_path / "env"
    out.write_text("")
    env_file.write_text("")
    proc = subprocess.run(["bash", "-c", step_script()], capture_output=True, text=True,
                          env={"PATH": f"{bindir}:/usr/bin:/bin", "GPQA_CSV": gpqa,
                               "GITHUB_OUTPUT": str(out), "GITHUB_ENV": str(env_file)},
                          check=True)
    select = dict(line.split("=", 1) for line in out.read_text().splitlines())["select"]
    return select, env_file.read_text(), proc.stdout


def test_what_the_runner_has_is_gated(tmp_path: Path) -> None:
    csv = tmp_path / "gpqa_diamond.csv"
    csv.write_text("Question,Correct Answer\n")
    select, env, notices = run_step(tmp_path, str(csv), tau2=True)
    assert select == "" and notices == ""
    assert env.strip() == f"PYTEST_ROCM_LLM_GPQA_CSV={csv}"


@pytest.mark.parametrize(("gpqa", "tau2", "left_out"), [
    ("", True, {"gpqa_accuracy"}),
    ("/nowhere/gpqa.csv", False, {"gpqa_accuracy", "tau2_accuracy"}),
])
def test_what_it_lacks_is_deselected_and_said(tmp_path: Path, gpqa: str, tau2: bool,
                                              left_out: set[str]) -> None:
    select, env, notices = run_step(tmp_path, gpqa, tau2)
    assert env == ""
    assert notices.count("::notice::") == len(left_out)
    collect = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "--rocm-target", "mi355x", "suites/glm52", "-k", select],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTEST_ROCM_LLM_GLM52_MODEL": ""})
    ids = [line for line in collect.stdout.splitlines() if "::" in line]
    everything = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "--rocm-target", "mi355x", "suites/glm52"],
        cwd=ROOT, capture_output=True, text=True, timeout=300).stdout
    all_ids = [line for line in everything.splitlines() if "::" in line]
    gone = {i.split("[")[-1].rstrip("]") for i in set(all_ids) - set(ids)}
    assert gone == left_out, (gone, collect.stdout[-2000:])
