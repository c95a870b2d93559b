"""The plan's schedule of a paired run: which build's server starts when, restarts counted
where one server fits (GPU) and parks where two do (CPU reference)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pytest_rocm_llm.config.builds import CANDIDATE, Build
from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite import load_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.report.schedule import paired_schedule
from tests.conftest import ROOT

SMOKE = ROOT / "suites" / "smoke" / "suite.toml"
GLM52 = ROOT / "suites" / "glm52" / "suite.toml"


def paired(target: str, trials: int = 2, budget: int | None = None) -> Settings:
    base = Settings(TARGETS[target], None, None, None, 600.0, False, None, "127.0.0.1",
                    Path("."))
    return dataclasses.replace(base, candidate=Build(CANDIDATE, None, {"X": "1"}),
                               pair_trials=trials, pair_budget=budget)


def test_no_candidate_no_schedule() -> None:
    s = dataclasses.replace(paired("cpu"), candidate=None)
    assert paired_schedule(load_suite(SMOKE), TARGETS["cpu"], s) == []


def test_gpu_schedule_restarts_and_turns_the_order_to_the_running_build() -> None:
    lines = paired_schedule(load_suite(GLM52), TARGETS["mi355x"], paired("mi355x"))
    text = "\n".join(lines)
    assert lines[0].endswith("the idle build's server stops: one fits at a time")
    first = next(ln for ln in lines if "workload" in ln and "trials" in ln)
    assert first.split(": ", 2)[2].split(";")[0] == "A (start) - B (start) - B - A (restart)"
    assert first.endswith("up to 20 trials (each block: 2 restarts)")  # budget 10 at CV 2%
    # the next workload on that profile starts with A, which is up: no switch at the seam
    assert "continues: 0" in text and "restart(s)" in text
    restarts = int(text.split("server starts: ")[1].split("(")[1].split(" ")[0])
    assert restarts >= 1


def test_cpu_schedule_parks_instead_of_restarting() -> None:
    lines = paired_schedule(load_suite(SMOKE), TARGETS["cpu"], paired("cpu", trials=3))
    text = "\n".join(lines)
    assert "parked (SIGSTOP) and continued" in lines[0]
    assert lines[0].endswith("both builds' servers are fresh for every block")
    # 3 trials per build run as two whole blocks: drift cancels only in whole blocks; the
    # second block on fresh servers of both builds
    assert ("decode, 8 trials: A (start) - B (start) - B - A (continue) - A (restart) - "
            "B (restart) - B - A (continue); then one block") in text
    assert "(4 restart(s))" in text  # decode's and aggregate's second blocks
    assert "  estimated time: ~" in text and "    workloads and sweep steps: ~" in text


def test_the_plan_says_what_each_paired_check_should_take() -> None:
    lines = paired_schedule(load_suite(SMOKE), TARGETS["cpu"], paired("cpu", 4, budget=12))
    assert "sequential trials: 4-12 trials per build" in lines[1]
    assert "measured 2026-12-04" in lines[1] and "fresh servers of both builds" in lines[1]
    (row,) = [ln for ln in lines if ln.startswith("    paired checks decode_speed:")]
    expected = float(row.split("about ")[1].split(" ")[0])
    assert 4 < expected <= 12 and "budget 12" in row
    assert "at trial CV 4.7% if unchanged" in row
    # smoke's decode trial is 3 x 32 tokens, shorter than the CPU figure's 2 x 128
    assert row.endswith("budget 12 (the CV is of 256-token trials; this one decodes 96, so "
                        "it spreads more and may take more trials)"), row
    work = next(ln for ln in lines if "workloads and sweep steps" in ln)
    assert " s at the expected trials, at most ~" in work and work.endswith("at the budget")


def test_the_plan_says_which_accuracy_checks_their_items_can_decide() -> None:
    lines = paired_schedule(load_suite(GLM52), TARGETS["mi355x"], paired("mi355x"))
    rows = {ln.split(":")[0].split()[-1]: ln for ln in lines
            if ln.startswith("    paired check ")}
    assert "decidable: margin 7 points" in rows["gpqa_accuracy"]
    assert "198 items can decide it" in rows["gpqa_accuracy"]
    assert "NOT DECIDABLE (reported, not failed)" in rows["tau2_accuracy"]
    assert "50 items cannot decide it" in rows["tau2_accuracy"]


def test_servers_in_containers_restart_even_where_two_fit() -> None:
    """SIGSTOP would reach the runtime's client, not the engine: no parking."""
    s = paired("cpu", trials=3)
    s = dataclasses.replace(s, candidate=dataclasses.replace(s.candidate, image="img:2"))
    lines = paired_schedule(load_suite(SMOKE), TARGETS["cpu"], s)
    assert lines[0].endswith("the idle build's server stops: a container's is not parked; "
                             "both builds' servers are fresh for every block")
    text = "\n".join(lines)
    assert "A (continue)" not in text
    # the CPU's servers have levels of their own: fresh ones for each block, 3 starts each
    # (A, B, then A again: one server at a time), the block the verdict's unit
    assert ("decode, 8 trials: A (start) - B (start) - B - A (restart) - A (restart) - "
            "B (restart) - B - A (restart)") in text, text
    assert "each block: 3 restarts: fresh servers of both builds)" in text, text
