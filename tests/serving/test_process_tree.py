"""Stopping a server reaches its whole process tree, including children that left its
process group (setsid, as engine workers and tokenizer managers may) and daemons that
double-forked away from their parent; whatever survives the stop is reported by pid and
command line, and killed. Real processes throughout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_rocm_llm.serving.ports import claim_port, release_port
from pytest_rocm_llm.serving.process import LaunchSpec, ServerProcess

# A server whose worker starts a grandchild in a new session (so outside the server's
# process group), and, when asked, a daemon that double-forks: its parent exits at once, so
# it is no longer anybody's descendant either. Each escaped process writes its pid.
STANDIN = textwrap.dedent(
    """
    import http.server, os, subprocess, sys
    port, pidfile, daemon = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    worker = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\\n"
        "g = subprocess.Popen(%r, start_new_session=True)\\n"
        "open(%r, 'a').write(f'{g.pid}\\\\n')\\n"
        "time.sleep(600)\\n") % (sleeper, pidfile)])
    if daemon:
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                open(pidfile, "a").write(f"{os.getpid()}\\n")
                os.execv(sys.executable, sleeper)
            os._exit(0)
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers()
        def log_message(self, *a):
            pass
    http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
    """
)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def pgid_of(pid: int) -> int:
    return os.getpgid(pid)


@pytest.fixture
def standin(tmp_path: Path):
    script = tmp_path / "standin.py"
    script.write_text(STANDIN)
    ports: list[int] = []
    escaped: list[int] = []

    def make(daemon: bool = False) -> tuple[LaunchSpec, Path]:
        port = claim_port()
        ports.append(port)
        pidfile = tmp_path / f"escaped-{port}.pids"
        spec = LaunchSpec(
            name="demo/escape", argv=(sys.executable, str(script), str(port), str(pidfile),
                                      "1" if daemon else "0"),
            env={}, host="127.0.0.1", port=port, health_path="/",
            log_path=tmp_path / f"server-{port}.log", start_timeout_s=30.0)
        return spec, pidfile

    def pids(pidfile: Path, n: int) -> list[int]:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            found = [int(x) for x in pidfile.read_text().split()] if pidfile.exists() else []
            if len(found) >= n:
                escaped.extend(found)
                return found
            time.sleep(0.1)
        raise AssertionError(f"the stand-in did not start {n} escaped process(es)")

    make.pids = pids  # type: ignore[attr-defined]
    yield make
    for p in ports:
        release_port(p)
    for pid in escaped:  # never let a red run leave sleepers behind
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def test_stop_reaches_a_child_that_left_the_process_group(standin) -> None:
    spec, pidfile = standin()
    server = ServerProcess(spec)
    with server:
        (grandchild,) = standin.pids(pidfile, 1)
        assert pgid_of(grandchild) != pgid_of(server.pid), "the grandchild did not escape"
    time.sleep(0.5)
    assert not alive(grandchild), "a setsid grandchild of the server survived its stop"
    assert getattr(server, "leaks", None) == []  # stopped with the tree, not found after


def test_stop_reaches_a_daemon_that_double_forked(standin) -> None:
    spec, pidfile = standin(daemon=True)
    server = ServerProcess(spec)
    with server:
        escaped = standin.pids(pidfile, 2)
        assert all(pgid_of(p) != pgid_of(server.pid) for p in escaped)
    time.sleep(0.5)
    assert [p for p in escaped if alive(p)] == []


def test_a_process_that_outlives_the_stop_is_reported_with_its_command_line() -> None:
    # A tree is snapshotted when the stop begins; a process started into it afterwards (a
    # worker respawned on SIGTERM) is what leak finding is for.
    from pytest_rocm_llm.serving.process_tree import Leak, find_leaks, server_tree, stop_tree

    tag = f"test-{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "PYTEST_ROCM_LLM_SERVER": tag}
    leader = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env=env,
                              process_group=0)
    tree = server_tree(leader.pid, tag)
    late = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)",
                             "--api-key", "s3cr3t-LEAK"], env=env, start_new_session=True)
    try:
        assert stop_tree(tree, grace_s=5) == []
        leader.wait(timeout=5)
        leaks = find_leaks(leader.pid, tag, secrets=("s3cr3t-LEAK",))
        assert [leak.pid for leak in leaks] == [late.pid]
        assert isinstance(leaks[0], Leak) and "time.sleep(600)" in leaks[0].cmdline
        assert "s3cr3t-LEAK" not in leaks[0].cmdline and "--api-key ***" in leaks[0].cmdline
        assert not alive(late.pid)  # found leaks are killed (and, our child, reaped)
    finally:
        for p in (leader, late):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_the_guardian_reaches_escaped_children_when_the_owner_dies(standin) -> None:
    spec, pidfile = standin()
    owner_code = textwrap.dedent(
        f"""
        import pathlib, sys, time
        from pytest_rocm_llm.serving.process import LaunchSpec, ServerProcess
        spec = LaunchSpec(name="x", argv={spec.argv!r}, env={{}}, host="127.0.0.1",
                          port={spec.port}, health_path="/",
                          log_path=pathlib.Path({str(spec.log_path)!r}), start_timeout_s=30)
        s = ServerProcess(spec, lambda m: None)
        s.start(); s.wait_ready()
        print(s.pid, flush=True)
        time.sleep(600)
        """
    )
    owner = subprocess.Popen([sys.executable, "-c", owner_code], stdout=subprocess.PIPE,
                             text=True)
    leader = int(owner.stdout.readline())
    (grandchild,) = standin.pids(pidfile, 1)
    owner.kill()  # SIGKILL: no finally, no atexit, like an xdist worker crash
    owner.wait()
    deadline = time.monotonic() + 30
    while (alive(leader) or alive(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(leader), "server leader survived its owner"
    assert not alive(grandchild), "an escaped grandchild survived its owner"
