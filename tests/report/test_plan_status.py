"""`pytest --llm-plan` exits with whether the run can go ahead (0) or what blocks it (see
report/plan_status.py), so `pytest --llm-plan ... && pytest ...` and a CI plan step work."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rocm_llm.report.plan_status import Blocker, PlanStatus, plan_status, status_lines
from tests.conftest import ROOT

GLM52 = ROOT / "suites" / "glm52" / "suite.toml"
SMOKE = ROOT / "suites" / "smoke"


def copy_suite(pytester: pytest.Pytester, source: Path, name: str) -> Path:
    d = pytester.path / "suites" / name
    d.mkdir(parents=True)
    for f in source.iterdir():
        if f.suffix in (".toml", ".py"):
            (d / f.name).write_text(f.read_text())
    return d


def test_the_lowest_code_wins_and_every_blocker_is_listed() -> None:
    blockers = [Blocker(PlanStatus.FLAGS_UNCHECKED, "a"), Blocker(PlanStatus.MODEL_MISSING, "b")]
    assert plan_status(blockers) == 11
    assert plan_status([]) == 0
    lines = status_lines(blockers)
    assert lines[0] == "plan: the run is blocked (exit 11: model missing):"
    assert lines[1:] == ["  [13] a", "  [11] b"]


def test_missing_model_blocks_the_plan(pytester: pytest.Pytester,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_ROCM_LLM_GLM52_MODEL", raising=False)
    copy_suite(pytester, GLM52.parent, "glm52")
    result = pytester.runpytest("--rocm-target", "mi355x", "--llm-plan", "--llm-engine-cmd",
                                "false", "-p", "no:cacheprovider", "suites")
    result.stdout.fnmatch_lines(["*plan: the run is blocked (exit 11: model missing):*",
                                 "*[[]11] glm52: model amd/GLM-5.2-MXFP4 not found: set "
                                 "$PYTEST_ROCM_LLM_GLM52_MODEL*",
                                 "*[[]13] glm52: flags not checked: *"])
    assert result.ret == PlanStatus.MODEL_MISSING


def test_an_unreachable_engine_blocks_the_plan(pytester: pytest.Pytester,
                                               tmp_path: Path) -> None:
    copy_suite(pytester, GLM52.parent, "glm52")
    result = pytester.runpytest("--rocm-target", "mi355x", "--llm-plan", "--llm-engine-cmd",
                                "false", "--llm-model-path", str(tmp_path),
                                "--llm-allow-unjudged", "-p", "no:cacheprovider", "suites")
    result.stdout.fnmatch_lines(["*plan: the run is blocked (exit 13: flags unchecked):*"])
    assert result.ret == PlanStatus.FLAGS_UNCHECKED


def test_a_broken_baseline_blocks_the_plan(pytester: pytest.Pytester, tmp_path: Path) -> None:
    copy_suite(pytester, GLM52.parent, "glm52")
    broken = pytester.path / "baselines"
    (broken / "mi355x").mkdir(parents=True)
    (broken / "mi355x" / "glm52.json").write_text("{not json")
    result = pytester.runpytest("--rocm-target", "mi355x", "--llm-plan", "--llm-engine-cmd",
                                "false", "--llm-model-path", str(tmp_path),
                                "--llm-baselines", str(broken),
                                "--llm-allow-unjudged", "-p", "no:cacheprovider", "suites")
    result.stdout.fnmatch_lines(["*plan: the run is blocked (exit 12: preflight):*",
                                 "*[[]12] *glm52.json*"])
    assert result.ret == PlanStatus.PREFLIGHT


@pytest.mark.engine
def test_plan_exits_0_when_the_run_can_go_ahead_and_10_on_rejected_flags(
        pytester: pytest.Pytester, engine_env: dict) -> None:
    """The CPU reference's own parsers check the smoke suite's profiles: all accepted, the
    plan says go; one profile with a flag sglang 0.5.23 does not know, the plan says no."""
    d = copy_suite(pytester, SMOKE, "smoke")
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", "--llm-plan",
                                           "-p", "no:cacheprovider", "suites")
    result.stdout.fnmatch_lines(["*plan: the run can go ahead (exit 0)*"])
    assert result.ret == PlanStatus.GO
    toml = (d / "suite.toml").read_text()
    (d / "suite.toml").write_text(toml.replace('"schedule-policy" = "lpm"',
                                               '"schedule-policy" = "lpm", "no-such-flag" = 1'))
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", "--llm-plan",
                                           "-p", "no:cacheprovider", "suites")
    result.stdout.fnmatch_lines(["*plan: the run is blocked (exit 10: flags rejected):*",
                                 "*[[]10] smoke/throughput: flags rejected*"])
    assert result.ret == PlanStatus.FLAGS_REJECTED


def test_a_test_module_that_does_not_import_is_not_a_go(pytester: pytest.Pytester,
                                                       tmp_path: Path) -> None:
    d = copy_suite(pytester, GLM52.parent, "glm52")
    (d / "test_broken.py").write_text("import no_such_module_anywhere\n")
    result = pytester.runpytest("--rocm-target", "mi355x", "--llm-plan", "--llm-engine-cmd",
                                "false", "--llm-model-path", str(tmp_path),
                                "--llm-allow-unjudged", "-p", "no:cacheprovider", "suites")
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_paired_plan_shows_the_candidate_and_its_schedule(pytester: pytest.Pytester,
                                                           tmp_path: Path) -> None:
    copy_suite(pytester, GLM52.parent, "glm52")
    result = pytester.runpytest("--rocm-target", "mi355x", "--llm-plan", "--llm-engine-cmd",
                                "false", "--llm-candidate-cmd", "true", "--llm-model-path",
                                str(tmp_path), "--llm-allow-unjudged", "-p",
                                "no:cacheprovider", "suites")
    result.stdout.fnmatch_lines([
        "candidate build: engine `*true`",
        "  profile reference: flags: not checked: could not run sglang's argument parser*",
        "paired schedule: A = incumbent, B = candidate; the idle build's server stops*",
        "*server starts: * restart(s)), continues: 0, for the minimum trials; about *",
        "*estimated time:*",
        "*[[]13] candidate build: glm52: flags not checked*"])
    assert result.ret == PlanStatus.FLAGS_UNCHECKED
