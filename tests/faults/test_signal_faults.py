"""Ctrl-C (SIGINT to pytest) while a server starts, while a workload loads it, and while a paired
run's evaluation is in flight on its first build (a report had SIGINT there ignored, the run
going on through its remaining evaluations): pytest ends as interrupted, promptly, with no
further evaluation, and every server process group is gone."""

from __future__ import annotations

import signal
import time

import pytest

from tests.conftest import suite_head
from tests.faults.background import start_pytest
from tests.serving.test_engine_lifecycle import finish, read_until

pytestmark = pytest.mark.engine

SUITE = suite_head("sig", {"default": {}}) + """
[evals.long_context]
kind = "long_context"
lengths = [1024, 2048]
samples = 8
max_tokens = 16
seed = 5

[checks.long_context_accuracy]
eval = "long_context"
metric = "accuracy_min"
min = 0.0
source = "test floor"
baseline = "none"

[workloads.long]
kind = "fixed_rate"
input_tokens = 64
output_tokens = 16
requests = 60
request_rate = 1.0
warmup = 1
"""

TESTS = """
def test_load(llm_workload):
    llm_workload("long")
"""
EVAL_TESTS = """
def test_check(llm_check, llm_judge):
    llm_judge(llm_check)
"""
# what each case waits for before SIGINT, and what it adds to the run
CASES = {
    # printed right after the launch
    "startup": ("loading server", TESTS, ()),
    # once a fifth of the workload's requests have completed
    "load": ("requests done", TESTS, ()),
    # the evaluation's first line on build A; a candidate that is the same install
    "evaluation": ("prompts at lengths", EVAL_TESTS,
                   ("--llm-candidate-env", "PYTEST_ROCM_LLM_SAME_BUILD=1")),
}


@pytest.mark.parametrize("during", list(CASES))
def test_ctrl_c(pytester: pytest.Pytester, suite_dir, engine_env, fault, during: str) -> None:
    mark, tests, args = CASES[during]
    suite_dir(SUITE, {"test_sig.py": tests}, name="sig")
    proc = start_pytest(pytester, *args)
    try:
        out = read_until(proc, mark, 1200)
        assert fault.saw(out), out
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out += finish(proc, timeout=60)
        seconds = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "KeyboardInterrupt" in out
    assert seconds < 60, f"pytest took {seconds:.0f} s to stop after Ctrl-C"
    if during == "evaluation":  # no build went on to evaluate, none was started after it
        assert out.count("prompts at lengths") == 1, out
        assert "@candidate: loading server" not in out, out
    fault.assert_no_leak(within_s=15)
