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


def paired(target: str, trials: int = 2) -> Settings:
    base = Settings(TARGETS[target], None, None, None, 600.0, False, None, "127.0.0.1",
                    Path("."))
    return dataclasses.replace(base, candidate=Build(CANDIDATE, None, {"X": "1"}),
                               pair_trials=trials)


def test_no_candidate_no_schedule() -> None:
    s = dataclasses.replace(paired("cpu"), candidate=None)
    assert paired_schedule(load_suite(SMOKE), TARGETS["cpu"], s) == []


def test_gpu_schedule_restarts_and_turns_the_order_to_the_running_build() -> None:
    lines = paired_schedule(load_suite(GLM52), TARGETS["mi355x"], paired("mi355x"))
    text = "\n".join(lines)
    assert lines[0].endswith("the idle build's server stops: one fits at a time")
    first = next(ln for ln in lines if "workload" in ln and "trials" in ln)
    assert first.split(": ", 2)[2] == "A (start) - B (start) - B - A (restart)"
    # the next workload on that profile starts with A, which is up: no switch at the seam
    assert "continues: 0" in text and "restart(s)" in text
    restarts = int(text.split("server starts: ")[1].split("(")[1].split(" ")[0])
    assert restarts >= 1


def test_cpu_schedule_parks_instead_of_restarting() -> None:
    lines = paired_schedule(load_suite(SMOKE), TARGETS["cpu"], paired("cpu", trials=3))
    text = "\n".join(lines)
    assert "parked (SIGSTOP) and continued" in lines[0]
    assert "decode, 6 trials: A (start) - B (start) - B - A (continue) - A - B (continue)" \
        in text
    assert "(0 restart(s))" in text
    assert "estimated time: workloads at most ~" in text


def test_servers_in_containers_restart_even_where_two_fit() -> None:
    """SIGSTOP would reach the runtime's client, not the engine: no parking."""
    s = paired("cpu", trials=3)
    s = dataclasses.replace(s, candidate=dataclasses.replace(s.candidate, image="img:2"))
    lines = paired_schedule(load_suite(SMOKE), TARGETS["cpu"], s)
    assert lines[0].endswith("the idle build's server stops: one fits at a time")
    assert "A (continue)" not in "\n".join(lines)
