"""Server lifecycle against the real sglang CPU reference, driven through pytester runs.

These launch real servers (tens of seconds each on two cores). Each run's servers are found
by the process-group id that the plugin prints when a server starts loading, and each test
ends by checking that the group has no live process left. One server per profile, reused by
the tests of its profile and reaped, is held by tests/performance/test_engine_workloads.py's
run (two profiles), not by a run of its own here (issue 20).
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_rocm_llm.serving.guardian import group_members
from tests.conftest import suite_head

pytestmark = pytest.mark.engine

LOADING = re.compile(r"\[rocm-llm\] (\S+): loading server at http://127\.0\.0\.1:(\d+) \(pid (\d+)")

TWO_PROFILES = suite_head("life", {"a": {"random-seed": 1}, "b": {"random-seed": 2}})

def launched(output: str) -> list[tuple[str, int, int]]:
    return [(m[1], int(m[2]), int(m[3])) for m in LOADING.finditer(output)]


def assert_groups_gone(pgids: list[int], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    left: dict[int, list[int]] = {}
    while time.monotonic() < deadline:
        left = {g: m for g in pgids if (m := group_members(g))}
        if not left:
            return
        time.sleep(0.5)
    pytest.fail(f"server processes left behind: {left}")


def read_until(proc: subprocess.Popen, pattern: str, timeout: float) -> str:
    """Read the child's output (raw fd: no buffer hides lines from select) until
    ``pattern`` appears; returns all output so far."""
    fd = proc.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    out = ""
    deadline = time.monotonic() + timeout
    while pattern not in out:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise AssertionError(f"{pattern!r} not seen in time; output so far:\n{out}")
        if sel.select(timeout=1.0):
            out += os.read(fd, 65536).decode(errors="replace")
    return out


def finish(proc: subprocess.Popen, timeout: float = 120.0) -> str:
    proc.wait(timeout=timeout)
    chunks = []
    while chunk := os.read(proc.stdout.fileno(), 65536):
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def start_sleeping_suite(pytester: pytest.Pytester, suite_dir) -> subprocess.Popen:
    """pytest in the background on a suite whose one test holds its server for 10 minutes."""
    suite_dir(TWO_PROFILES, {"test_life.py": "import time\n"
                                             "def test_a(llm_server): time.sleep(600)\n"},
              name="life")
    return start_pytest(pytester)


def start_pytest(pytester: pytest.Pytester, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "--rocm-target", "cpu", "-s", "-p", "no:cacheprovider",
         *args],
        cwd=pytester.path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        # A shell's background job inherits SIGINT ignored, and Python then installs no
        # KeyboardInterrupt handler; restore the default so SIGINT acts as Ctrl-C does.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_unknown_flag_fails_before_launch_naming_the_flag(pytester: pytest.Pytester,
                                                          suite_dir, engine_env,
                                                          monkeypatch) -> None:
    # --nsa-prefill-backend is how older builds and some public recipes spell
    # --dsa-prefill-backend; sglang 0.5.23 rejects it.
    bad = TWO_PROFILES.replace('flags = { "random-seed" = 2 }',
                               'flags = { "nsa-prefill-backend" = "tilelang" }')
    suite_dir(bad, {"test_life.py": "def test_a(llm_server): pass"}, name="life")
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", timeout=600)
    out = result.stdout.str()
    result.assert_outcomes(errors=1)
    assert "rejects flags --nsa-prefill-backend before launch" in out
    assert "profile 'b': unrecognized arguments: --nsa-prefill-backend tilelang" in out
    assert "loading server" not in out


def test_crash_while_loading_shows_the_log_tail(pytester: pytest.Pytester, suite_dir,
                                               engine_env, monkeypatch) -> None:
    broken = pytester.path / "broken-model"
    broken.mkdir()
    # A checkpoint whose architecture no engine knows: the load fails inside sglang.
    (broken / "config.json").write_text(
        '{"architectures": ["NoSuchModelForCausalLM"], "model_type": "nosuchmodel"}')
    suite_dir(TWO_PROFILES, {"test_life.py": "def test_a(llm_server): pass\n"
                                             "def test_b(llm_server): pass\n"}, name="life")
    # A user-supplied signature for this failure: the error must lead with it.
    sigs = pytester.path / "sigs.toml"
    sigs.write_text('[[signature]]\nid = "unknown-arch"\ntitle = "checkpoint architecture '
                    'unknown to the engine"\npattern = "nosuchmodel"\nadvice = "upgrade"\n')
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", "--llm-model-path",
                                           str(broken), "--llm-signatures", str(sigs),
                                           timeout=600)
    out = result.stdout.str()
    result.assert_outcomes(errors=2)
    assert "life/a: server exited with code" in out
    assert "--- last 50 log lines ---" in out
    assert "infrastructure: known failure signature:" in out
    assert "checkpoint architecture unknown to the engine (unknown-arch), log line" in out
    assert "NoSuchModel" in out or "nosuchmodel" in out
    # the second test gets the same failure at once: one launch only
    assert len(launched(out)) == 1
    log = re.search(r"server log: (\S+)", out)
    assert log and Path(log[1]).is_file(), "the failed server's log must be kept"
    assert_groups_gone([pid for _, _, pid in launched(out)])


# A start that never becomes ready, and Ctrl-C while a server loads and while it serves, are
# proven in tests/faults (test_server_faults.test_start_never_ready: the timeout message, the
# log tail, no relaunch for the next test, nothing left; test_signal_faults.test_ctrl_c
# [startup] and [load]: exit status INTERRUPTED, KeyboardInterrupt, stopped within 60 s,
# nothing left). The copies that stood here asserted a subset of those on three more
# server starts (issue 20).


def test_killed_pytest_leaves_no_server_behind(pytester: pytest.Pytester, suite_dir,
                                               engine_env, monkeypatch) -> None:
    """SIGKILL gives pytest no chance to clean up (as when an xdist worker crashes): the
    guardian process in the server's group must reap it."""
    proc = start_sleeping_suite(pytester, suite_dir)
    try:
        out = read_until(proc, "ready in", 600)
        servers = launched(out)
        assert servers and group_members(servers[0][2]), out
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert_groups_gone([pid for _, _, pid in servers], timeout=40)
