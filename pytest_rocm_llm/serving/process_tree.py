"""A server's whole process tree: found, stopped (SIGTERM, then SIGKILL after a grace period),
and checked for leaks afterwards, with psutil. No pytest in here.

A server's processes are found three ways, because each alone misses some: the leader's
descendants (parent links, lost when an intermediate parent exits: a double-forked daemon),
the members of its process group (left by any child that calls setsid, as engine workers and
tokenizer managers may), and every process whose environment carries the server's tag
(inherited through fork and exec, kept across setsid and double forks; lost only by a child
started with a cleared environment, whose parent then still links it as a descendant).
pytest-xprocess and pytest-postgresql stop their servers' trees with psutil the same way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import psutil

from pytest_rocm_llm.redact import redact_argv, redact_text

# The environment variable that tags every process of one server launch.
TAG_ENV = "PYTEST_ROCM_LLM_SERVER"


@dataclass(frozen=True)
class Leak:
    """A process of a server's tree still alive after the server was stopped."""

    pid: int
    cmdline: str  # masked: a leaked engine process's command line carries its flags

    def describe(self) -> str:
        return f"pid {self.pid}: {self.cmdline}"


def _live(p: psutil.Process) -> bool:
    try:
        return bool(p.is_running() and p.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def server_tree(leader: int, tag: str | None = None,
                exclude: Iterable[int] = ()) -> list[psutil.Process]:
    """Every live process of the server whose process group is ``leader`` (it was started
    with ``process_group=0``) and whose processes carry ``TAG_ENV=tag``; never this process
    or the pids in ``exclude``."""
    skip = {os.getpid(), *exclude}
    found: dict[int, psutil.Process] = {}
    for p in psutil.process_iter():
        if p.pid in skip:
            continue
        try:
            tagged = tag is not None and p.environ().get(TAG_ENV) == tag
            grouped = os.getpgid(p.pid) == leader
        except (psutil.Error, OSError):
            continue  # gone meanwhile, or another user's (not ours to stop)
        # Once the leader is reaped its pid may be reused, by a process that leads a group
        # of the same number: with a tag, the leader's pid counts only if tagged.
        if tagged or (grouped and (p.pid != leader or tag is None)):
            found[p.pid] = p
    for p in list(found.values()):
        try:
            found.update({c.pid: c for c in p.children(recursive=True)})
        except psutil.Error:
            continue
    return [p for pid, p in found.items() if pid not in skip and _live(p)]


def _signal(procs: Iterable[psutil.Process], sig: signal.Signals) -> None:
    for p in procs:
        try:
            p.send_signal(sig)  # psutil checks the pid was not reused since p was found
        except psutil.Error:
            pass


def stop_tree(procs: Sequence[psutil.Process], grace_s: float,
              own: Sequence[subprocess.Popen[bytes]] = ()) -> list[psutil.Process]:
    """SIGTERM every process, wait up to ``grace_s`` for all to exit, SIGKILL the rest;
    returns the processes that had to be killed. ``own`` are this process's children among
    them, reaped through their Popen so that their exit codes are kept."""
    own_pids = {o.pid for o in own}
    others = [p for p in procs if p.pid not in own_pids]
    for sig in (signal.SIGTERM, signal.SIGCONT):
        # A stopped (SIGSTOPped, hung-in-debugger) process acts on SIGTERM only once resumed.
        _signal(others, sig)
        for o in own:
            if o.poll() is None:
                o.send_signal(sig)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if all(o.poll() is not None for o in own) and not any(_live(p) for p in others):
            break
        time.sleep(0.1)
    killed = [p for p in others if _live(p)]
    _signal(killed, signal.SIGKILL)
    for o in own:
        if o.poll() is None:
            killed.append(psutil.Process(o.pid))
            o.kill()
        o.wait()
    psutil.wait_procs(killed, timeout=5)
    return killed


def find_leaks(leader: int, tag: str | None = None, secrets: Iterable[str] = (),
               exclude: Iterable[int] = ()) -> list[Leak]:
    """The processes of a stopped server's tree still alive, killed; each with its pid and
    masked command line."""
    left = server_tree(leader, tag, exclude)
    leaks = [Leak(p.pid, _cmdline(p, tuple(secrets))) for p in left]
    _signal(left, signal.SIGKILL)
    psutil.wait_procs(left, timeout=5)
    return sorted(leaks, key=lambda leak: leak.pid)


def _cmdline(p: psutil.Process, secrets: tuple[str, ...]) -> str:
    try:
        argv = p.cmdline() or [p.name()]
    except psutil.Error:
        return "?"
    return redact_text(" ".join(redact_argv(argv)), secrets)
