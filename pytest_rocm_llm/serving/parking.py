"""Parking a server: its whole process tree stopped (SIGSTOP) and later continued, instead
of a stop and a relaunch. No pytest in here.

A paired run alternates two builds' servers. Where both fit in memory at once (the CPU
reference: two 135M-parameter servers), the idle build's server is parked: a stopped process
takes no CPU time, so the build being measured has the node to itself, as after a real stop,
and the next switch costs a signal instead of a server start (about a minute on two cores,
many minutes for a large model). The guardian that kills the server if pytest dies stays
running. A parked server is continued before it is stopped (a stopped process does not act
on SIGTERM until it is continued).
"""

from __future__ import annotations

import os
import signal

from pytest_rocm_llm.serving.process import ServerProcess


def _group(process: ServerProcess) -> int | None:
    pid = process.pid
    if pid is None:
        return None
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def park(process: ServerProcess) -> bool:
    """Stop the server's process group (its workers with it); False if it is gone, or
    cannot be parked (a container's: the group is the runtime's client)."""
    group = _group(process) if getattr(process, "parkable", True) else None
    if group is None:
        return False
    os.killpg(group, signal.SIGSTOP)
    guardian = getattr(process, "guardian", None)
    if guardian is not None and guardian.poll() is None:
        os.kill(guardian.pid, signal.SIGCONT)  # it must stay able to clean up after pytest
    return True


def resume(process: ServerProcess) -> None:
    group = _group(process) if getattr(process, "parkable", True) else None
    if group is not None:
        os.killpg(group, signal.SIGCONT)
