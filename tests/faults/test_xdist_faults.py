"""pytest-xdist: two suites on two workers launch each suite's server once and write whole,
parseable results; a worker killed mid-run leaves no server behind (its guardian reaps it),
and the other worker's suite is not disturbed by it. One run holds both claims (it was two:
a run costs its server starts, issue 20): suite xb's last test holds its server and its
worker is SIGKILLed then, after both suites' workloads have run."""

from __future__ import annotations

import json
import os
import re
import signal
import time
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import SMOKE_MODEL
from tests.faults.background import start_pytest

pytestmark = pytest.mark.engine


def suite(name: str) -> str:
    return f"""
[suite]
name = "{name}"
{SMOKE_MODEL}
[profiles.default]

[workloads.w]
kind = "single_stream"
input_tokens = 32
output_tokens = 8
requests = 2
warmup = 1

[checks.speed]
workload = "w"
metric = "output_speed_tok_s"
min = 0.1
source = "any decoding at all"
"""


TESTS = """
from pytest_rocm_llm.client.generate import LLMClient

def test_generate(llm_server):
    with LLMClient(llm_server) as c:
        assert c.generate("Hi", max_new_tokens=3).completion_tokens == 3

def test_performance(llm_check, llm_judge):
    llm_judge(llm_check)
"""

HOLD = """
import json, os, time

def test_hold(llm_server):
    with open(os.environ["FAULT_NOTES"], "w") as fh:
        json.dump({"worker": os.getpid(), "pgid": llm_server.process.pid}, fh)
    time.sleep(600)
"""

LOG = re.compile(r"(\w+)-default-(\d+)\.log")


def test_two_suites_on_two_workers_then_one_worker_killed(
        pytester: pytest.Pytester, suite_dir, engine_env, monkeypatch, fault) -> None:
    notes = pytester.path / "notes.json"
    monkeypatch.setenv("FAULT_NOTES", str(notes))
    suite_dir(suite("xa"), {"test_xa.py": TESTS}, name="xa")
    suite_dir(suite("xb"), {"test_xb.py": TESTS + HOLD}, name="xb")
    logs = pytester.path / "logs"
    # No replacement worker: xdist would otherwise rerun the crashed test on it (measured:
    # a new server launched and held for the test's 600 s sleep). A first run records its
    # baselines, judged on floors.
    # (--basetemp: the workloads' result files under this test's directory, checked below)
    proc = start_pytest(pytester, "-n", "2", "--dist", "loadgroup", "--max-worker-restart",
                        "0", "--llm-keep-logs", "--llm-log-dir", str(logs),
                        f"--basetemp={pytester.path / 'tmp'}", "--junitxml=junit.xml",
                        "--llm-regen-all")
    try:
        deadline = time.monotonic() + 1500
        while not notes.exists() or not notes.read_text():
            assert time.monotonic() < deadline and proc.poll() is None, "no server came up"
            time.sleep(0.5)
        held = json.loads(notes.read_text())
        fault.pgids.add(held["pgid"])
        # xa runs on the other worker; let it finish (its results are checked below)
        while len(list(pytester.path.rglob("llm-workloads/xa-w.json"))) == 0:
            assert time.monotonic() < deadline and proc.poll() is None, "xa never ran"
            time.sleep(0.5)
        os.kill(held["worker"], signal.SIGKILL)
        # communicate, not wait: the pipe is drained while xdist reports the crash
        out = proc.communicate(timeout=600)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "crashed" in out, out
    assert re.search(r"\b4 passed\b", out) and re.search(r"\b1 failed\b", out), out[-3000:]
    # one launch per suite: one server log each (kept), each on its own port
    launches = [LOG.fullmatch(p.name) for p in logs.iterdir()]
    assert sorted(m[1] for m in launches if m) == ["xa", "xb"], sorted(logs.iterdir())
    fault.ports.update(int(m[2]) for m in launches if m)
    for log in logs.iterdir():
        assert "Uvicorn running" in log.read_text(errors="replace") or \
            "The server is fired up" in log.read_text(errors="replace"), log
    # each suite's workload ran once and its results are whole JSON / CSV
    runs = sorted(pytester.path.rglob("llm-workloads/*.json"))
    assert sorted(p.stem for p in runs) == ["xa-w", "xb-w"], runs
    for path in runs:
        metrics = json.loads(path.read_text())["metrics"]
        assert metrics["success_ratio"] == 1.0 and metrics["requests"] == 2
        rows = path.with_suffix(".csv").read_text().splitlines()
        assert len(rows) == 3, rows
    # the controller still writes whole JUnit XML: four passes and the crashed test
    cases = list(ET.parse(pytester.path / "junit.xml").getroot().iter("testcase"))
    assert len(cases) == 5, out
    # the guardian polls its owner every 0.5 s and gives the group 15 s to stop
    fault.assert_no_leak(within_s=40)
