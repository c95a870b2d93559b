"""tau2-bench runner: a missing command is Tau2Unavailable with the fix; the command line
follows tau2's CLI; its results JSON (shape of tau2's Results model, written here) becomes
an EvalResult. tau2-bench itself is not installed here, so no simulation runs."""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path

import pytest

from pytest_rocm_llm.config.toml import Table
from pytest_rocm_llm.correctness.accuracy.config import parse_accuracy
from pytest_rocm_llm.correctness.accuracy.tau2 import (
    Endpoint,
    Tau2Unavailable,
    parse_results,
    results_file,
    run_tau2,
    tau2_argv,
)


def config(text: str = ""):
    t = Table(tomllib.loads('kind = "tau2"\ndomain = "airline"\n' + text), Path("s.toml"),
              "evals.tau")
    return parse_accuracy("tau", t)


AGENT = Endpoint("http://127.0.0.1:30000", "glm")


def test_missing_command_is_unavailable_with_the_fix(tmp_path: Path) -> None:
    cfg = config('tau2_command = ["no-such-tau2-command"]')
    with pytest.raises(Tau2Unavailable) as e:
        run_tau2(cfg, AGENT, None, tmp_path, lambda _: None)
    assert "'no-such-tau2-command' is not on PATH" in e.value.reason
    assert "sierra-research/tau2-bench" in e.value.reason and "unrelated" in e.value.reason


def test_command_line_follows_the_tau2_cli(tmp_path: Path) -> None:
    cfg = config("limit = 5\nnum_trials = 2\nseed = 7\nconcurrency = 3")
    user = Endpoint("http://10.0.0.2:8000/", "judge")
    argv = tau2_argv(cfg, ["tau2"], AGENT, user, tmp_path / "run")
    opts = dict(zip(argv[2::2], argv[3::2], strict=True))
    assert argv[:2] == ["tau2", "run"]
    assert opts["--domain"] == "airline" and opts["--agent-llm"] == "openai/glm"
    assert opts["--user-llm"] == "openai/judge"
    assert json.loads(opts["--agent-llm-args"])["api_base"] == "http://127.0.0.1:30000/v1"
    assert json.loads(opts["--user-llm-args"])["api_base"] == "http://10.0.0.2:8000/v1"
    assert (opts["--num-tasks"], opts["--num-trials"], opts["--seed"]) == ("5", "2", "7")
    assert opts["--max-concurrency"] == "3" and opts["--save-to"] == str(tmp_path / "run")
    assert "api_key" not in " ".join(argv)


def test_the_agent_gets_the_template_kwargs_and_a_declared_user_does_not(tmp_path: Path):
    cfg = config("chat_template_kwargs = { enable_thinking = true }")
    user = Endpoint("http://10.0.0.2:8000/", "gpt-4.1")

    def args(argv: list[str]) -> tuple[dict, dict]:
        opts = dict(zip(argv[2::2], argv[3::2], strict=True))
        return json.loads(opts["--agent-llm-args"]), json.loads(opts["--user-llm-args"])

    agent, simulator = args(tau2_argv(cfg, ["tau2"], AGENT, user, tmp_path / "run"))
    assert agent["extra_body"] == {"chat_template_kwargs": {"enable_thinking": True}}
    assert "extra_body" not in simulator
    agent, simulator = args(tau2_argv(config(), ["tau2"], AGENT, user, tmp_path / "run"))
    assert "extra_body" not in agent


def sim(task: str, trial: int, reward: float | None, reason: str = "agent_stop") -> dict:
    return {"id": f"{task}-{trial}", "task_id": task, "trial": trial,
            "termination_reason": reason, "messages": [],
            "reward_info": None if reward is None else {"reward": reward}}


def test_results_become_an_eval_result() -> None:
    cfg = config("limit = 2\nnum_trials = 2")
    data = {"info": {}, "tasks": [], "simulations": [
        sim("0", 0, 1.0), sim("0", 1, 0.0), sim("1", 0, 1.0), sim("1", 1, 1.0, "user_stop")]}
    r = parse_results(data, cfg)
    assert r.kind == "tau2" and r.problems == ()
    assert (r.metrics["n"], r.metrics["correct"], r.metrics["accuracy"]) == (4, 3, 0.75)
    assert r.records[1] == {"id": "0#1", "task_id": "0", "trial": 1, "reward": 0.0,
                            "correct": False, "termination_reason": "agent_stop"}


def test_unscored_or_missing_simulations_are_problems() -> None:
    cfg = config("limit = 3")
    data = {"simulations": [sim("0", 0, 1.0), sim("1", 0, None, "agent_error")]}
    r = parse_results(data, cfg)
    assert r.metrics["failed_requests"] == 1 and r.metrics["n"] == 1
    assert any("1 of 2 tau2 simulations have no reward" in p for p in r.problems)
    assert any("ran 2 simulations, expected 3" in p for p in r.problems)
    assert parse_results({}, cfg).problems == ("tau2 results have no 'simulations' list",)


def test_runs_a_tau2_command_and_reads_its_results_file(tmp_path: Path) -> None:
    # A stand-in for the tau2 command (tau2-bench is not installed here): it writes the
    # results where tau2 writes them for an absolute --save-to, and records its key.
    fake = tmp_path / "fake-tau2"
    fake.write_text(
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --save-to ] && out=$2; shift; done\n"
        "echo \"key=$OPENAI_API_KEY\" >&2\n"
        'echo \'{"simulations": [{"task_id": "0", "trial": 0, "termination_reason": '
        '"user_stop", "reward_info": {"reward": 1.0}}]}\' > "$out.json"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    cfg = config(f'tau2_command = ["{fake}"]\nlimit = 1')
    r = run_tau2(cfg, AGENT, None, tmp_path / "work", lambda _: None, api_key="k-123")
    assert r.problems == () and r.metrics["accuracy"] == 1.0
    log = next((tmp_path / "work").glob("*.log")).read_text()
    assert "key=k-123" in log
    assert results_file(tmp_path / "nothing") is None
