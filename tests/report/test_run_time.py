"""The plan's whole-run time estimate: every start, trial, sweep step and evaluation counted at
the speeds it states, for a single run and a paired one."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from pytest_rocm_llm.config.builds import CANDIDATE, Build
from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite import load_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.report.run_time import estimate, profiles_used, suite_speeds
from pytest_rocm_llm.report.schedule import paired_schedule
from tests.conftest import ROOT

GLM52 = ROOT / "suites" / "glm52" / "suite.toml"
SMOKE = ROOT / "suites" / "smoke" / "suite.toml"
MI355X, CPU = TARGETS["mi355x"], TARGETS["cpu"]
WORKFLOW = ROOT / ".github" / "workflows" / "upgrade-gate.yml"


def settings(target: str = "mi355x", images: bool = False) -> Settings:
    s = Settings(TARGETS[target], None, None, None, 1800.0, False, None, "127.0.0.1",
                 Path("."))
    if not images:
        return s
    return dataclasses.replace(s, engine_image="img:1", container_runtime="docker",
                               candidate=Build(CANDIDATE, image="img:2"))


def test_glm52_speeds_are_its_floors() -> None:
    sp = suite_speeds(load_suite(GLM52), MI355X)
    # 213 tok/s single stream, 2626 tok/s capacity; 2.4 req/s x 20k x (1 - 0.6) prefill
    assert (sp.decode_tok_s, sp.batch_tok_s) == (213.0, 2626.0)
    assert sp.prefill_tok_s == pytest.approx(2.4 * 20000 * 0.4)
    assert "the suite's floors" in sp.source


def test_every_part_of_a_single_run_is_counted() -> None:
    suite = load_suite(GLM52)
    run = estimate(suite, MI355X, settings())
    assert run.starts == len(profiles_used(suite, MI355X)) == 4
    sp = run.speeds
    assert sp.decode_tok_s and sp.prefill_tok_s and sp.batch_tok_s
    one = 1500 / sp.decode_tok_s + 10000 / sp.prefill_tok_s  # a 10k / 1.5k request
    single = 3 * 11 * one  # decode, decode_reference, decode_simulated: 10 requests + warm-up
    drain = 1000 / sp.decode_tok_s + 20000 * 0.4 / sp.prefill_tok_s
    aggregate = 2 * drain + 1200 / 2.4 + drain  # 2 warm-up requests, arrivals, the drain
    sweep = 2 * drain + sum(400 / r + drain for r in (2.0, 2.4, 2.8, 3.2))
    assert run.workloads_s == pytest.approx(single + aggregate + sweep)
    gsm8k = (1319 + 300 + 300) * 16384 / 2626  # answers at max_tokens, capacity-bound
    gpqa = 198 * 16384 / 2626
    parity = 2 * (64 + 32) * 128 / 213
    long_context = sum(3 * 6 * (n / sp.prefill_tok_s + 64 / 213)
                       for n in (20000, 65536, 131072))
    tau2 = 6 * 3600.0  # tau2-bench's run, bounded by its own timeout
    assert run.evaluations_s == pytest.approx(gsm8k + gpqa + parity + long_context + tau2)
    assert run.start_bound_s == 4 * (1800 + 900)  # start timeout after the VRAM wait
    assert run.bound_s > run.expected_s


def test_a_paired_run_counts_both_builds_every_trial_and_every_restart() -> None:
    suite = load_suite(GLM52)
    s = settings(images=True)
    single = estimate(suite, MI355X, settings())
    lines = paired_schedule(suite, MI355X, s)
    text = "\n".join(lines)
    starts = int(re.search(r"server starts: (\d+) \(", text).group(1))
    further = int(re.search(r"about (\d+) more restarts", text).group(1))
    est = re.search(r"estimated time: ~(.+?) expected, at most ~(.+?) \(", text)
    assert est, text
    assert f"server starts: {starts + further} at ~600 s each" in text
    assert "evaluations: ~%.0f s" % (2 * single.evaluations_s) in text
    assert "at most" in text and "at the budget" in text


def test_the_cpu_reference_states_its_measured_pace() -> None:
    run = estimate(load_suite(SMOKE), CPU, settings("cpu"))
    assert run.speeds.decode_tok_s == CPU.pace.decode_tok_s
    assert run.start_bound_s == run.starts * 1800  # no VRAM wait without a GPU
    assert "measured" in run.lines()[1]


def test_a_suite_without_a_speed_says_what_it_cannot_bound() -> None:
    suite = load_suite(GLM52)
    bare = dataclasses.replace(suite, checks={k: c for k, c in suite.checks.items()
                                              if c.metric not in ("output_speed_tok_s",)},
                               target_checks={})
    run = estimate(bare, MI355X, settings())
    assert run.speeds.decode_tok_s is None
    assert "not bounded:" in run.lines()[0] and "aggregate" in run.lines()[0]


def _hours(text: str) -> float:
    m = re.fullmatch(r"(?:(\d+) h )?(\d+) min", text)
    assert m, text
    return int(m.group(1) or 0) + int(m.group(2)) / 60


def test_the_recipe_job_timeout_stands_above_the_plans_bound() -> None:
    """The workflow's timeout-minutes against the plan's 'at most' for the recipe's own run:
    glm52 on MI355X, both builds from images, the default trials and budget."""
    timeout = int(re.search(r"timeout-minutes: (\d+)", WORKFLOW.read_text()).group(1))
    text = "\n".join(paired_schedule(load_suite(GLM52), MI355X, settings(images=True)))
    bound = re.search(r"estimated time: ~.+? expected, at most ~(.+?) \(", text).group(1)
    assert timeout / 60 >= _hours(bound), (timeout, bound)
