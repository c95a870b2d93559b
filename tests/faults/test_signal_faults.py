"""Ctrl-C (SIGINT to pytest) while a workload loads the server and while a server starts:
pytest ends as interrupted, promptly, and every server process group is gone."""

from __future__ import annotations

import signal
import time

import pytest

from tests.conftest import SMOKE_MODEL
from tests.faults.background import start_pytest
from tests.serving.test_engine_lifecycle import finish, read_until

pytestmark = pytest.mark.engine

SUITE = f"""
[suite]
name = "sig"
{SMOKE_MODEL}
[profiles.default]

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


@pytest.mark.parametrize("during", ["startup", "load"])
def test_ctrl_c(pytester: pytest.Pytester, suite_dir, engine_env, fault, during: str) -> None:
    suite_dir(SUITE, {"test_sig.py": TESTS}, name="sig")
    proc = start_pytest(pytester)
    try:
        # "loading server" is printed right after the launch; "requests done" once a fifth
        # of the workload's requests have completed
        out = read_until(proc, "loading server" if during == "startup" else "requests done",
                         1200)
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
    fault.assert_no_leak(within_s=15)
