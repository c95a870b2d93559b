"""Stop a server's process tree when the pytest process that owns it dies uncleanly.

Run as ``python -m pytest_rocm_llm.serving.guardian OWNER_PID PGID [TAG]`` inside the
server's process group (``OWNER_PID container RUNTIME NAME`` for a server in a
container). A normal stop ends this process first (``STAND_DOWN``); SIGTERM it ignores.
If the owner dies any other way (SIGKILL: an xdist worker crash, an OOM kill; SIGTERM,
which ends Python with no cleanup) nothing else would stop the server, so this does, the
way the owner would: the whole tree, children that left the group included
(``process_tree``; TAG is the server's environment tag), or the container. While it waits
it imports only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

# What the owner sends before a normal stop (its default action ends the process, so it
# works even before the guardian has started up).
STAND_DOWN = signal.SIGUSR1


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(owner: int, pgid: int, tag: str | None = None, poll_s: float = 0.5,
         grace_s: float = 15.0) -> int:
    # A SIGTERM meant for every pytest process (``pkill -f pytest`` matches this command
    # line too) must not take the guardian along with its owner, or nobody stops the server;
    # the owner's own stop stands the guardian down with STAND_DOWN first.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    original_parent = os.getppid()
    while alive(owner) and os.getppid() == original_parent:
        time.sleep(poll_s)
    # The owner is gone without stopping the server: stop it the way the owner would.
    from pytest_rocm_llm.serving.process_tree import find_leaks, server_tree, stop_tree

    stop_tree(server_tree(pgid, tag), grace_s)
    find_leaks(pgid, tag)  # nobody is left to report to: killing them is what matters
    return 0


def main_container(owner: int, runtime: str, name: str, poll_s: float = 0.5,
                   grace_s: float = 15.0) -> int:
    """As ``main``, for a server in a container (serving/container.py): killing the
    runtime's client never stops the container, so the guardian removes it."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    original_parent = os.getppid()
    while alive(owner) and os.getppid() == original_parent:
        time.sleep(poll_s)
    remove(runtime, name, grace_s)
    return 0


def remove(runtime: str, name: str, grace_s: float = 20.0) -> None:
    """The runtime's stop (SIGTERM, SIGKILL after ``grace_s``), then removal (a container
    run with --rm may be gone by then: that is the point). Here, not in serving/container.py,
    so that the guardian needs nothing but the standard library (container imports this)."""
    for argv, timeout_s in (([runtime, "stop", "-t", str(int(grace_s)), name], grace_s + 60),
                            ([runtime, "rm", "-f", name], 120.0)):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                           stdin=subprocess.DEVNULL, check=False)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        # Field 5 (pgrp) follows the parenthesised command name, which may contain spaces.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 3 and int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


if __name__ == "__main__":
    if sys.argv[2] == "container":  # OWNER_PID container RUNTIME NAME
        sys.exit(main_container(int(sys.argv[1]), sys.argv[3], sys.argv[4]))
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None))
