"""One inference server process: start, wait until ready, watch, stop. No pytest in here.

The server runs in its own process group with output to a log file, and every process it
starts carries its tag in the environment, so stopping it reaches its whole process tree, even
workers that left the group (``process_tree``); whatever outlives the stop is reported by pid
and command line, and killed. A guardian process joins the group and stops the tree if this
process dies without stopping it (SIGKILL, an xdist worker crash). Progress is logged
(``progress_log``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from pytest_rocm_llm.errors import InfrastructureError
from pytest_rocm_llm.http import sync_client
from pytest_rocm_llm.log_tail import TAIL_LINES, file_tail
from pytest_rocm_llm.progress_log import report
from pytest_rocm_llm.redact import redact_argv, redact_text, secret_values
from pytest_rocm_llm.serving import start_ledger
from pytest_rocm_llm.serving.guardian import STAND_DOWN
from pytest_rocm_llm.serving.ports import bindable
from pytest_rocm_llm.serving.process_tree import (
    TAG_ENV,
    Leak,
    find_leaks,
    server_tree,
    stop_tree,
)

log = logging.getLogger(__name__)


class ServerError(InfrastructureError):
    """The server could not be started or is no longer serving (an infrastructure failure,
    never a verdict about the build's speed or accuracy)."""

    def __init__(self, message: str, log_path: Path | None = None, tail: str = "") -> None:
        self.log_path = log_path
        self.tail = tail
        text = message
        if log_path is not None:
            text += f"\nserver log: {log_path}"
        if tail:
            text += f"\n--- last {TAIL_LINES} log lines ---\n{tail}"
        super().__init__(text)


class ServerStartError(ServerError):
    pass


class ServerDied(ServerError):
    pass


# A log line after which a loading server never becomes ready: its HTTP bind failed
# (asyncio's words, raised through uvicorn, which sglang and vLLM both serve with). sglang does
# not exit then: uvicorn's sys.exit ends only the main thread, and the warm-up thread sglang
# started before the bind keeps the process alive (sglang/srt/entrypoints/http_server.py), so
# the wait ran to its start timeout (a CI launch hung 12 minutes this way).
NEVER_READY = re.compile(r"error while attempting to bind on address")


# Secret values each server log was written with: engines echo their arguments into their
# logs (sglang prints its server_args, api_key included), so whoever reads a log back (a
# failure's tail, an attachment, a signature hit) gets them masked by path, with no need to
# know which server wrote it.
_LOG_SECRETS: dict[Path, set[str]] = {}


def log_secrets(path: Path | None) -> tuple[str, ...]:
    return tuple(_LOG_SECRETS.get(Path(path), ())) if path is not None else ()


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of a server log, with the server's secrets masked."""
    return file_tail(path, lines, log_secrets(path))


@dataclass(frozen=True)
class LaunchSpec:
    name: str  # e.g. "smoke/default", for messages
    argv: tuple[str, ...]
    env: Mapping[str, str]  # added to a clean copy of os.environ
    host: str
    port: int
    health_path: str
    log_path: Path
    start_timeout_s: float

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values masked in anything we print or store about this server."""
        return secret_values(self.argv, self.env)

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


class ServerProcess:
    """A context manager around one engine server process group."""

    def __init__(self, spec: LaunchSpec, progress: Callable[[str], None] | None = None) -> None:
        self.spec = spec
        # None: progress is logged. A callback (the old interface) gets the lines instead.
        self.progress = progress
        self.proc: subprocess.Popen[bytes] | None = None
        self.guardian: subprocess.Popen[bytes] | None = None
        self.ready_after_s: float | None = None
        # What outlived the last stop (reported, then killed).
        self.leaks: list[Leak] = []
        self.tag = ""
        self._scanned = 0  # bytes of the log already searched for NEVER_READY lines

    def _say(self, message: str, level: int = logging.INFO) -> None:
        report(log, message, self.progress, level)

    @property
    def base_url(self) -> str:
        return self.spec.base_url

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> None:
        spec = self.spec
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        if not bindable(spec.host, spec.port):
            # Else the engine loads for minutes before failing to bind, and meanwhile the
            # readiness poll may be answered by whatever holds the port.
            raise ServerStartError(f"{spec.name}: port {spec.port} on {spec.host} is already "
                                   "in use by another process; free it or let the plugin "
                                   "pick another port")
        # Unique per launch, so a stop never reaches another server's (or run's) processes.
        self.tag = f"{os.getpid()}-{spec.port}-{time.time_ns()}"
        env = dict(os.environ)
        env.update(spec.env)
        env[TAG_ENV] = self.tag
        _LOG_SECRETS.setdefault(spec.log_path, set()).update(spec.secrets)
        with open(spec.log_path, "ab") as log:
            header = redact_text(" ".join(redact_argv(self._popen_argv())), spec.secrets)
            log.write(f"$ {header}\n".encode())
            log.flush()
            self._scanned = log.tell()
            try:
                self.proc = subprocess.Popen(
                    self._popen_argv(), stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, env=env, process_group=0,
                )
            except OSError as exc:
                raise ServerStartError(
                    f"{spec.name}: cannot execute {spec.argv[0]!r}: {exc.strerror}",
                    spec.log_path,
                ) from None
        try:
            self.guardian = subprocess.Popen(
                self._guardian_argv(), process_group=self.proc.pid, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": _package_parent()},
            )
        except BaseException:
            self.stop()
            raise
        start_ledger.record("start", self.tag, spec.name, spec.argv)
        self._say(f"{spec.name}: loading server at {spec.base_url} "
                  f"(pid {self.proc.pid}, log {spec.log_path})")

    def _popen_argv(self) -> list[str]:
        return list(self.spec.argv)

    def _guardian_argv(self) -> list[str]:
        assert self.proc is not None
        return [sys.executable, "-m", "pytest_rocm_llm.serving.guardian", str(os.getpid()),
                str(self.proc.pid), self.tag]

    def wait_ready(self, poll_s: float = 1.0, report_every_s: float = 30.0) -> float:
        """Poll the health endpoint until it answers 200; returns seconds to ready."""
        assert self.proc is not None, "start() first"
        spec = self.spec
        t0 = time.monotonic()
        try:
            self.ready_after_s = self._poll_ready(t0, poll_s, report_every_s)
        except BaseException:
            start_ledger.record("failed", self.tag, spec.name, spec.argv,
                                seconds=time.monotonic() - t0)
            raise
        start_ledger.record("ready", self.tag, spec.name, spec.argv,
                            seconds=self.ready_after_s)
        self._say(f"{spec.name}: ready in {self.ready_after_s:.1f} s")
        return self.ready_after_s

    def _poll_ready(self, t0: float, poll_s: float, report_every_s: float) -> float:
        assert self.proc is not None
        spec = self.spec
        last_report = t0
        with sync_client(timeout_s=10.0, connect_s=2.0) as client:
            while True:
                code = self.proc.poll()
                if code is not None:
                    raise ServerStartError(
                        f"{spec.name}: server exited with code {code} while loading",
                        spec.log_path, log_tail(spec.log_path))
                fatal = self._never_ready_line()
                if fatal is not None:
                    raise ServerStartError(
                        f"{spec.name}: the server cannot become ready, its log says: {fatal} "
                        f"(a process took port {spec.port} while it loaded, or the host "
                        "address is not this machine's)", spec.log_path,
                        log_tail(spec.log_path))
                try:
                    r = client.get(spec.base_url + spec.health_path)
                    if r.status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                now = time.monotonic()
                if now - t0 > spec.start_timeout_s:
                    raise ServerStartError(
                        f"{spec.name}: not ready after {spec.start_timeout_s:.0f} s "
                        f"(start timeout; raise it with --llm-start-timeout)",
                        spec.log_path, log_tail(spec.log_path))
                if now - last_report >= report_every_s:
                    last_line = log_tail(spec.log_path, 1)[-160:]
                    self._say(f"{spec.name}: still loading after {now - t0:.0f} s: "
                              f"{last_line}")
                    last_report = now
                time.sleep(poll_s)
        return time.monotonic() - t0

    def _never_ready_line(self) -> str | None:
        """The first NEVER_READY line written since the last call (whole lines only, masked),
        or None."""
        try:
            with open(self.spec.log_path, "rb") as fh:
                fh.seek(self._scanned)
                chunk = fh.read()
        except OSError:
            return None
        end = chunk.rfind(b"\n") + 1  # a line still being written is read next time
        self._scanned += end
        for line in chunk[:end].decode(errors="replace").splitlines():
            if NEVER_READY.search(line):
                return redact_text(line.strip(), log_secrets(self.spec.log_path))[:300]
        return None

    def check_alive(self) -> None:
        if self.proc is None:
            raise ServerDied(f"{self.spec.name}: server was never started")
        code = self.proc.poll()
        if code is not None:
            raise ServerDied(f"{self.spec.name}: server process exited with code {code}",
                             self.spec.log_path, log_tail(self.spec.log_path))

    def _release(self) -> tuple[subprocess.Popen[bytes] | None, subprocess.Popen[bytes] | None]:
        """Take the server and its guardian from this object, the guardian stood down: it
        ignores the SIGTERM the tree is about to get, and this stop is the owner's own.
        Every variant's stop starts here."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None, None
        guardian, self.guardian = self.guardian, None
        if guardian is not None:
            with contextlib.suppress(ProcessLookupError):
                guardian.send_signal(STAND_DOWN)
        return proc, guardian

    def stop(self, grace_s: float = 20.0) -> int | None:
        """SIGTERM the whole process tree, SIGKILL what is left after ``grace_s``, then find
        leaks (``self.leaks``). Returns the leader's exit code."""
        proc, guardian = self._release()
        if proc is None:
            return None
        own = [proc] + ([guardian] if guardian is not None else [])
        stop_tree(server_tree(proc.pid, self.tag), grace_s, own)
        self.leaks = find_leaks(proc.pid, self.tag, self.spec.secrets)
        if self.leaks:
            self._say(f"{self.spec.name}: {len(self.leaks)} process(es) outlived the server's "
                      "stop and were killed: "
                      + "; ".join(leak.describe() for leak in self.leaks), logging.WARNING)
        return proc.returncode

    def __enter__(self) -> ServerProcess:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _package_parent() -> str:
    return str(Path(__file__).resolve().parents[2])
