"""tau2 with the server under test as its own user simulator is not the published
benchmark (tau2-bench's numbers use a fixed external simulator): its score is reported,
paired-only, with no absolute floor and the reason in the verdict and the plan; with a
declared simulator endpoint the published floor applies."""

from __future__ import annotations

from pathlib import Path

from pytest_rocm_llm.config.suite import Suite, load_suite, parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.correctness.result import EvalResult
from pytest_rocm_llm.serving.server import LLMServer
from pytest_rocm_llm.verdicts.baselines import BaselineCache
from pytest_rocm_llm.verdicts.checks import FloorMissed
from pytest_rocm_llm.verdicts.judge import judge_eval
from tests.report.test_plan import GLM52, glm52_plan

MI355X = TARGETS["mi355x"]
RESULT = EvalResult("tau2", "tau2", {"accuracy": 0.5, "n": 50.0, "correct": 25.0})


def suite(tmp_path: Path, user: dict) -> Suite:
    return parse_suite(tmp_path / "suite.toml", {
        "suite": {"name": "t", "targets": ["mi355x"]}, "model": {"id": "org/m"},
        "profiles": {"default": {}},
        "evals": {"tau2": {"kind": "tau2", "domain": "airline", **user}},
        "checks": {"tau2_accuracy": {"eval": "tau2", "metric": "accuracy",
                                     "reference_score": 0.834, "source": "published 83.4"}}})


def judge(s: Suite, tmp_path: Path):
    server = LLMServer("t", "default", "http://127.0.0.1:1", "sglang", "m", "/m", (), {},
                       "0.5.23")
    check = s.checks_for(MI355X)[0]
    return judge_eval(check, RESULT, s, MI355X, server, BaselineCache(tmp_path), "check",
                      {"kind": "measured", "date": "2026-12-02"}, "id", {})


def test_no_declared_simulator_is_reported_paired_only(tmp_path: Path) -> None:
    out = judge(suite(tmp_path, {}), tmp_path)
    v = out.decision.verdict
    assert out.error is None and (v.status, v.measured, v.floor) == ("pass", 0.5, "")
    assert any(n.startswith("paired-only: the user simulator is the server under test")
               for n in v.notes)
    assert out.decision.write is None  # nothing to gate on later either


def test_a_declared_simulator_gets_the_published_floor(tmp_path: Path) -> None:
    s = suite(tmp_path, {"user_base_url": "http://sim:8000", "user_model": "gpt-4.1"})
    out = judge(s, tmp_path)
    assert isinstance(out.error, FloorMissed), out.error
    assert "user simulator: gpt-4.1 at http://sim:8000, temperature 0" in \
        out.decision.verdict.notes


def test_the_plan_says_paired_only_and_why() -> None:
    lines = glm52_plan().splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("  tau2_accuracy: "))
    assert "no absolute floor (paired-only: the user simulator is the server under test" \
        in lines[i]
    assert lines[i + 3] == "    baseline gate: none (paired-only)"
    assert load_suite(GLM52).eval_for("tau2", MI355X).user_base_url is None
