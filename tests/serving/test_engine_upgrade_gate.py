"""ci/upgrade-gate.sh, the recipe .github/workflows/upgrade-gate.yml runs on an MI355X node,
run for real here: two CPU-reference images (two imports, two image ids, the same software:
an unchanged build), a real docker daemon, the plan and then the paired run, each server in a
container of its own that restarts at every switch of build, as on a GPU node. Skipped where
no docker daemon answers.

What it proves: the recipe's plan step exits 0 on its own inputs and checks flags in both
images; the paired run does not call an unchanged build regressed; each build's values carry
its own image id; the results JSON, the Allure results and both builds' server logs are where
the workflow uploads them from; `docker ps -a` is as it was; both builds' servers are fresh
for each block, here too (the CPU's servers have levels of their own: with one block and the
pairs as the unit, this test once saw the same build "regressed" -4.6% [-7.6%, -1.6%], two
pairs sharing one candidate server). Sized for CI: one decode check, two A-B-B-A blocks (six
container starts: A, B, A again in each) instead of the target's default budget (the
defaults' rates are bench_paired_calibration.py's to show)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.cpu_ref_image import container_args, docker_answers, docker_ps, ensure_image
from tests.plugin.test_paired_run import decode_suite

pytestmark = [pytest.mark.engine, pytest.mark.container, pytest.mark.alone]

SUITE = decode_suite("gate")
TESTS = "def test_check(llm_check, llm_judge):\n    llm_judge(llm_check)\n"


def test_the_recipe_gates_an_unchanged_build_through_two_images(
        tmp_path: Path, engine_env: dict, reference_model_dir: Path) -> None:
    if not docker_answers():
        pytest.skip("no docker daemon reachable")
    incumbent = ensure_image("pytest-rocm-llm/cpu-ref:gate-incumbent")
    candidate = ensure_image("pytest-rocm-llm/cpu-ref:gate-candidate")
    suite = tmp_path / "suites" / "gate"
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text(SUITE)
    (suite / "test_gate.py").write_text(TESTS)
    out = tmp_path / "out"
    before = docker_ps()
    env = {**os.environ, "INCUMBENT_IMAGE": incumbent, "CANDIDATE_IMAGE": candidate,
           "TARGET": "cpu", "SUITE": "suites/gate", "OUT": str(out), "INCONCLUSIVE": "pass",
           "PYTEST": str(Path(sys.executable).parent / "pytest")}
    proc = subprocess.run(
        [str(ROOT / "ci" / "upgrade-gate.sh"), *container_args(), "-p", "no:cacheprovider",
         "--llm-pair-trials", "4", "--llm-pair-budget", "4"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1500)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-6000:]
    # the plan ran first and checked the flags with both images' own parsers
    plan, _, run = text.partition("paired run: incumbent vs candidate")
    assert "plan: the run can go ahead" in plan, plan[-4000:]
    assert f"candidate build: image {candidate}" in plan, plan[-4000:]
    assert plan.count("flags: accepted by sglang 0.5.23's parser") == 2, plan[-4000:]
    doc = json.loads((out / "results.json").read_text())
    (row,) = doc["paired"]
    assert row["check"] == "decode_speed" and row["n"] == 4, row
    assert row["status"] != "regressed", row["detail"]
    # no parking in containers, and fresh servers for each block, the block the unit
    assert ": parked (SIGSTOP)" not in run and "in 2 blocks of fresh servers" in row["detail"], \
        row
    starts = [ln for ln in run.splitlines() if ln.lstrip().startswith("server-start")]
    assert len(starts) == 6, starts
    # each build's values carry its own image
    versions = doc["builds"]["gate/reference"]["versions"]
    ids = {b: versions[b]["image_id"] for b in ("incumbent", "candidate")}
    assert ids["incumbent"] != ids["candidate"] and all(ids.values()), ids
    # and so does each row a build measured: a tag can move, the id on the row cannot
    measured = [v for v in doc["verdicts"] if v["build"]]
    assert measured and all(v["image_id"] == ids[v["build"]] for v in measured), measured
    assert any((out / "allure-results").iterdir())
    assert "**PASS**" in (out / "summary.md").read_text()  # the job page's summary
    logs = sorted(p.name for p in (out / "server-logs").glob("*.log"))
    assert any("candidate" in n for n in logs) and any("candidate" not in n for n in logs), logs
    assert docker_ps() == before, "containers left behind"
