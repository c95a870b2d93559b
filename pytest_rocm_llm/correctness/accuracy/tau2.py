"""tau2-bench (sierra-research/tau2-bench) through its own ``tau2`` command.

tau2-bench is installed by the user (from its repository; the PyPI name ``tau2`` is an
unrelated package), with its domain data under ``$TAU2_DATA_DIR``. We drive its CLI and read
its results file; we never import it (its pins are its own).

Interface, from the tau2-bench sources (docs/cli-reference.md, src/tau2/cli.py):
``tau2 run --domain D --agent-llm M --user-llm M --agent-llm-args JSON --user-llm-args JSON
--num-trials N --num-tasks K --seed S --max-concurrency C --save-to NAME``. The LLM names
and args go to LiteLLM (src/tau2/utils/llm_utils.py forwards the args as keyword arguments
to ``litellm.completion``), so an OpenAI-compatible server is ``openai/<served name>`` with
``{"api_base": "<url>/v1"}``; LiteLLM's openai provider reads the key from
``OPENAI_API_KEY``, which is passed in the environment, never on the command line (tau2
records the llm args in its results).

Results (src/tau2/data_model/simulation.py, ``Results``): JSON with ``simulations``, each
with ``task_id``, ``trial``, ``termination_reason`` and ``reward_info.reward`` (1.0 = task
solved). run_domain saves to ``DATA_DIR / "simulations" / f"{save_to}.json"``; an absolute
``--save-to`` replaces that prefix (pathlib), so we pass one inside our own work directory.
Releases with directory-based runs write ``<save_to>/results.json``; both are looked for.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_rocm_llm.correctness.accuracy.config import AccuracyConfig
from pytest_rocm_llm.correctness.accuracy.stats import stderr
from pytest_rocm_llm.correctness.result import EvalResult
from pytest_rocm_llm.errors import DatasetUnavailable
from pytest_rocm_llm.log_tail import file_tail

SUCCESS = 1.0 - 1e-6  # tau2 counts a simulation as solved when its reward is 1 (float)


class Tau2Unavailable(DatasetUnavailable):
    """The tau2-bench command, which brings the tasks, cannot run here; ``reason`` says why
    and how to install it."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # an OpenAI-compatible server, e.g. http://127.0.0.1:30000
    model: str  # its served model name


def find_command(config: AccuracyConfig) -> list[str]:
    argv = list(config.tau2_command)
    if shutil.which(argv[0]) is None:
        raise Tau2Unavailable(
            f"eval {config.name}: the tau2-bench command {argv[0]!r} is not on PATH; install "
            "tau2-bench from https://github.com/sierra-research/tau2-bench (pip install -e . "
            "in a clone; the PyPI package named 'tau2' is unrelated), set TAU2_DATA_DIR to its "
            "data directory, or set tau2_command in the eval's table")
    return argv


def check_inputs(config: AccuracyConfig, *_data: object) -> None:
    """tau2's inputs (config/evals.py TAU2): its command, which brings the tasks; the data
    directory and GPQA file the other kinds read are not its."""
    find_command(config)


def _llm(endpoint: Endpoint, config: AccuracyConfig, agent: bool = True) -> tuple[str, str]:
    args: dict[str, Any] = {"api_base": endpoint.base_url.rstrip("/") + "/v1",
                            "temperature": config.temperature, "max_tokens": config.max_tokens}
    if agent and config.chat_template_kwargs:
        # LiteLLM sends extra_body's keys in the request body, where sglang reads them; only
        # the agent (the model under test) gets them, never a declared user simulator.
        args["extra_body"] = {"chat_template_kwargs": dict(config.chat_template_kwargs)}
    return f"openai/{endpoint.model}", json.dumps(args)


def tau2_argv(config: AccuracyConfig, command: list[str], agent: Endpoint, user: Endpoint,
              save_to: Path) -> list[str]:
    agent_llm, agent_args = _llm(agent, config)
    user_llm, user_args = _llm(user, config, agent=user == agent)
    argv = [*command, "run", "--domain", str(config.domain),
            "--agent-llm", agent_llm, "--agent-llm-args", agent_args,
            "--user-llm", user_llm, "--user-llm-args", user_args,
            "--num-trials", str(config.num_trials), "--seed", str(config.seed),
            "--max-concurrency", str(config.concurrency), "--save-to", str(save_to)]
    if config.limit is not None:
        argv += ["--num-tasks", str(config.limit)]
    return argv


def results_file(save_to: Path) -> Path | None:
    for candidate in (save_to.with_name(save_to.name + ".json"), save_to / "results.json"):
        if candidate.is_file():
            return candidate
    return None


def parse_results(data: Mapping[str, Any], config: AccuracyConfig) -> EvalResult:
    sims = data.get("simulations")
    if not isinstance(sims, list):
        return EvalResult(config.name, "tau2", {"n": 0.0, "failed_requests": 0.0},
                          problems=("tau2 results have no 'simulations' list",))
    records = []
    rewards: list[float] = []
    unscored = 0
    reasons: dict[str, int] = {}
    for sim in sims:
        reward = (sim.get("reward_info") or {}).get("reward")
        reason = str(sim.get("termination_reason"))
        reasons[reason] = reasons.get(reason, 0) + 1
        if not isinstance(reward, (int, float)):
            unscored += 1
        else:
            rewards.append(float(reward))
        records.append({"id": f"{sim.get('task_id')}#{sim.get('trial')}",
                        "task_id": sim.get("task_id"), "trial": sim.get("trial"),
                        "reward": reward, "correct": isinstance(reward, (int, float))
                        and reward >= SUCCESS, "termination_reason": reason})
    n = len(rewards)
    solved = sum(r >= SUCCESS for r in rewards)
    accuracy = sum(rewards) / n if n else float("nan")  # pass^1: the mean reward
    problems = []
    if unscored:
        problems.append(f"{unscored} of {len(sims)} tau2 simulations have no reward (they "
                        "did not run to evaluation); the score is not judged")
    expected = config.limit * config.num_trials if config.limit is not None else None
    if expected is not None and len(sims) < expected:
        problems.append(f"tau2 ran {len(sims)} simulations, expected {expected} "
                        f"({config.limit} tasks x {config.num_trials} trials)")
    if n == 0:
        problems.append("no tau2 simulation was scored")
    metrics = {"accuracy": accuracy, "stderr": stderr(accuracy, n) if n else float("nan"),
               "n": float(n), "correct": float(solved), "failed_requests": float(unscored),
               "simulations": float(len(sims))}
    details = (f"{config.name}: tau2 {config.domain}: {solved}/{n} solved, mean reward "
               f"{accuracy:.3f}; terminations: "
               + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())),)
    return EvalResult(config.name, "tau2", metrics, tuple(records), tuple(problems), details)


def run_tau2(config: AccuracyConfig, agent: Endpoint, user: Endpoint | None, workdir: Path,
             progress: Callable[[str], None] = print, api_key: str | None = None) -> EvalResult:
    """Run tau2-bench against ``agent`` (the server under test) with ``user`` as the user
    simulator (default: the same endpoint); raises Tau2Unavailable if tau2 is missing."""
    command = find_command(config)
    workdir.mkdir(parents=True, exist_ok=True)
    save_to = (workdir / f"tau2-{config.name}-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    argv = tau2_argv(config, command, agent, user or agent, save_to)
    env = dict(os.environ)
    # LiteLLM's openai provider refuses to run without a key; local servers accept any.
    env["OPENAI_API_KEY"] = api_key or env.get("OPENAI_API_KEY") or "EMPTY"
    log_path = workdir / f"{save_to.name}.log"
    progress(f"[rocm-llm] eval {config.name}: tau2 {config.domain} against {agent.base_url} "
             f"(log {log_path})")
    start = last = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, process_group=0)
        try:
            while proc.poll() is None:
                now = time.monotonic()
                if now - start > config.timeout_s:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    return _failed(config, f"tau2 did not finish in {config.timeout_s:.0f} s",
                                   log_path)
                if now - last >= 30.0:
                    last = now
                    progress(f"[rocm-llm] eval {config.name}: tau2 running, "
                             f"{now - start:.0f} s")
                time.sleep(1.0)
        finally:
            if proc.poll() is None:  # interrupted: never leave tau2 running
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    found = results_file(save_to)
    if proc.returncode != 0 or found is None:
        why = (f"tau2 exited with status {proc.returncode}" if proc.returncode
               else f"tau2 wrote no results at {save_to}.json or {save_to}/results.json")
        return _failed(config, why, log_path)
    try:
        data = json.loads(found.read_text())
    except ValueError as exc:
        return _failed(config, f"tau2 results {found} are not JSON ({exc})", log_path)
    return parse_results(data, config)


def _failed(config: AccuracyConfig, why: str, log_path: Path) -> EvalResult:
    tail = file_tail(log_path)
    return EvalResult(config.name, "tau2", {"n": 0.0, "failed_requests": 0.0},
                      problems=(f"{why}; log {log_path}, last lines:\n{tail}",))
