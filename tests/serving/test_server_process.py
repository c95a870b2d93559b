"""ServerProcess mechanics (process group, readiness, timeouts, guardian) on a tiny
stand-in process. These test the engine-agnostic process class only; launching real sglang
is covered by test_engine_lifecycle.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_rocm_llm.serving.ports import LOCK_DIR, SPACING, claim_port, release_port
from pytest_rocm_llm.serving.process import LaunchSpec, ServerProcess, ServerStartError

# The stand-ins' HTTP server on the port in argv[1] (test_progress_log.py's too): every GET
# is healthy, and nothing is logged per request.
OK_SERVER = textwrap.dedent(
    """\
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers()
        def log_message(self, *a):
            pass

    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
    """)

STANDIN = textwrap.dedent(
    """
    import http.server, os, subprocess, sys, time
    delay, pidfile = float(sys.argv[2]), sys.argv[3]
    # a worker in the same process group, as sglang's scheduler processes are
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(pidfile, "w").write(str(child.pid))
    for i in range(5):
        print(f"loading step {i}", flush=True)
    if delay < 0:
        print("fatal: weight shape mismatch in layer 3", flush=True)
        sys.exit(3)
    time.sleep(delay)

    """) + OK_SERVER


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def make_spec(tmp_path: Path):
    script = tmp_path / "standin.py"
    script.write_text(STANDIN)
    ports: list[int] = []

    def make(delay: float, timeout: float = 30.0) -> tuple[LaunchSpec, Path]:
        port = claim_port()
        ports.append(port)
        pidfile = tmp_path / f"child-{port}.pid"
        spec = LaunchSpec(
            name="demo/default",
            argv=(sys.executable, str(script), str(port), str(delay), str(pidfile)),
            env={}, host="127.0.0.1", port=port, health_path="/health_generate",
            log_path=tmp_path / f"server-{port}.log", start_timeout_s=timeout,
        )
        return spec, pidfile

    yield make
    for p in ports:
        release_port(p)


def test_ready_then_stop_reaps_the_whole_group(make_spec) -> None:
    spec, pidfile = make_spec(delay=1.0)
    lines: list[str] = []
    server = ServerProcess(spec, lines.append)
    with server:
        assert server.ready_after_s is not None and server.ready_after_s >= 1.0
        leader, child = server.pid, int(pidfile.read_text())
        assert alive(leader) and alive(child)
    assert wait_gone(child, 5) and not alive(leader)
    assert lines[0].startswith("[rocm-llm] demo/default: loading server at http://127.0.0.1:")
    assert lines[-1].startswith("[rocm-llm] demo/default: ready in ")


def test_exit_while_loading_reports_the_log_tail(make_spec) -> None:
    spec, pidfile = make_spec(delay=-1)
    server = ServerProcess(spec, lambda _: None)
    with pytest.raises(ServerStartError) as info:
        with server:
            pass
    text = str(info.value)
    assert "server exited with code 3 while loading" in text
    assert "fatal: weight shape mismatch in layer 3" in text
    assert f"server log: {spec.log_path}" in text and spec.log_path.exists()
    assert wait_gone(int(pidfile.read_text()), 5)


def test_start_timeout_fires_with_the_log_tail(make_spec) -> None:
    spec, pidfile = make_spec(delay=600, timeout=2.0)
    t0 = time.monotonic()
    with pytest.raises(ServerStartError) as info:
        with ServerProcess(spec, lambda _: None):
            pass
    assert time.monotonic() - t0 < 30
    assert "not ready after 2 s (start timeout; raise it with --llm-start-timeout)" in str(
        info.value)
    assert "loading step 4" in str(info.value)
    assert wait_gone(int(pidfile.read_text()), 5)


# A failed HTTP bind as sglang lives through it: asyncio's own bind error, printed as
# uvicorn's logger prints it before its sys.exit, which ends only the main thread; the
# non-daemon warm-up thread sglang started before the bind keeps the process alive.
BIND_FAILS = textwrap.dedent(
    """
    import asyncio, sys, threading, time
    threading.Thread(target=time.sleep, args=(600,)).start()
    time.sleep(float(sys.argv[2]))  # loading the model

    async def bind():
        await asyncio.get_running_loop().create_server(asyncio.Protocol, "127.0.0.1",
                                                       int(sys.argv[1]))
    try:
        asyncio.run(bind())
    except OSError as exc:
        print(f"ERROR:    {exc}", flush=True)
        sys.exit(1)
    """
)


def test_a_port_taken_while_loading_fails_at_the_bind_error_not_the_timeout(
        tmp_path: Path) -> None:
    script = tmp_path / "bind_fails.py"
    script.write_text(BIND_FAILS)
    port = claim_port()
    spec = LaunchSpec(name="demo/default", argv=(sys.executable, str(script), str(port), "1"),
                      env={}, host="127.0.0.1", port=port, health_path="/health_generate",
                      log_path=tmp_path / "server.log", start_timeout_s=120)
    server = ServerProcess(spec, lambda _: None)
    try:
        server.start()
        # Taken after the launch's own check, before the server binds: the readiness poll
        # now reaches this socket, which never answers (the 12-minute CI hang).
        with socket.create_server(("127.0.0.1", port)):
            t0 = time.monotonic()
            with pytest.raises(ServerStartError) as info:
                server.wait_ready()
            waited = time.monotonic() - t0
        leader = server.pid
        assert leader is not None and alive(leader)  # it did not exit by itself
    finally:
        server.stop()
        release_port(port)
    assert waited < 60, waited
    text = str(info.value)
    assert (f"demo/default: the server cannot become ready, its log says: ERROR:    [Errno 98] "
            f"error while attempting to bind on address ('127.0.0.1', {port}): address "
            f"already in use (a process took port {port} while it loaded") in text
    assert f"server log: {spec.log_path}" in text
    assert wait_gone(leader, 5)


def test_crash_after_ready_is_detected(make_spec) -> None:
    from pytest_rocm_llm.serving.process import ServerDied

    spec, _ = make_spec(delay=0.2)
    server = ServerProcess(spec, lambda _: None)
    with server:
        os.kill(server.pid, signal.SIGKILL)
        server.proc.wait()
        with pytest.raises(ServerDied, match="server process exited with code -9"):
            server.check_alive()


@pytest.mark.parametrize("how", ["sigkill-owner", "sigterm-owner-and-guardian"])
def test_guardian_reaps_the_server_when_its_owner_is_killed(make_spec, how: str) -> None:
    """SIGKILL: no finally, no atexit, like an xdist worker crash. SIGTERM to the owner and
    the guardian at once, as ``pkill -f pytest`` sends it (both command lines match): the
    guardian used to die with its owner and the server lived on (seen with a real vLLM
    server)."""
    spec, pidfile = make_spec(delay=0.2)
    owner_code = textwrap.dedent(
        f"""
        import sys, time
        from pytest_rocm_llm.serving.process import LaunchSpec, ServerProcess
        spec = LaunchSpec(name="x", argv={spec.argv!r}, env={{}}, host="127.0.0.1",
                          port={spec.port}, health_path="/", log_path=__import__("pathlib").Path(
                          {str(spec.log_path)!r}), start_timeout_s=30)
        s = ServerProcess(spec, lambda m: None)
        s.start(); s.wait_ready()
        print(s.pid, s.guardian.pid, flush=True)
        time.sleep(600)
        """
    )
    owner = subprocess.Popen([sys.executable, "-c", owner_code], stdout=subprocess.PIPE,
                             text=True)
    leader, guardian = map(int, owner.stdout.readline().split())
    child = int(pidfile.read_text())
    assert alive(leader) and alive(child) and alive(guardian)
    if how == "sigkill-owner":
        owner.kill()
    else:
        os.kill(guardian, signal.SIGTERM)
        owner.terminate()
    owner.wait()
    assert wait_gone(leader, 30), "server leader survived its owner"
    assert wait_gone(child, 30), "server worker survived its owner"
    assert wait_gone(guardian, 30), "the guardian outlived the server it stopped"


def test_a_normal_stop_stands_the_guardian_down_at_once(make_spec) -> None:
    spec, _ = make_spec(delay=0.2)
    server = ServerProcess(spec, lambda _: None)
    with server:
        guardian = server.guardian
        assert guardian is not None
    # Not SIGKILLed after the grace period: it ignores SIGTERM, so only STAND_DOWN ends it.
    assert guardian.returncode == -signal.SIGUSR1
    assert not server.leaks


def test_claimed_ports_are_distinct_and_spaced() -> None:
    ports = [claim_port() for _ in range(4)]
    try:
        assert len(set(ports)) == 4
        for a in ports:
            for b in ports:
                assert a == b or abs(a - b) >= SPACING
            assert (LOCK_DIR / f"{a}.lock").read_text() == str(os.getpid())
    finally:
        for p in ports:
            release_port(p)
    assert not any((LOCK_DIR / f"{p}.lock").exists() for p in ports)


def test_claim_of_a_dead_process_is_taken_over() -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    port = claim_port()
    release_port(port)
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    (LOCK_DIR / f"{port}.lock").write_text(str(dead.pid))
    from pytest_rocm_llm.serving.ports import _try_lock

    assert _try_lock(port)
    release_port(port)


def test_stale_claims_nearby_do_not_block_a_port() -> None:
    from pytest_rocm_llm.serving.ports import _near_claimed

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    port = claim_port()
    release_port(port)
    neighbour = LOCK_DIR / f"{port + 1}.lock"
    neighbour.write_text(str(dead.pid))
    try:
        assert not _near_claimed(port)
        neighbour.write_text(str(os.getpid()))  # a live claim next door does block it
        assert _near_claimed(port)
    finally:
        neighbour.unlink(missing_ok=True)


def test_every_start_is_in_the_ledger_with_its_context_and_seconds(
        make_spec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_rocm_llm.serving import start_ledger

    ledger = tmp_path / "starts.jsonl"
    monkeypatch.setenv(start_ledger.LEDGER_ENV, str(ledger))
    monkeypatch.setenv(start_ledger.CONTEXT_ENV, "tests/x.py::test_y")
    ready, _ = make_spec(delay=1.0)
    with ServerProcess(ready, lambda _: None):
        pass
    never, _ = make_spec(delay=30.0, timeout=1.0)
    with pytest.raises(ServerStartError):
        with ServerProcess(never, lambda _: None):
            pass
    first, second = start_ledger.read(ledger)
    assert (first.outcome, first.context, first.name) == ("ready", "tests/x.py::test_y",
                                                          "demo/default")
    assert first.ready_s is not None and first.ready_s >= 1.0
    assert second.outcome == "failed" and second.ready_s is not None
    # a stand-in is no engine: the budget counts sglang and vLLM servers only
    assert first.engine == "other" and start_ledger.engine_starts([first, second]) == []
