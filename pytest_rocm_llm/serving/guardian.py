"""Kill a server's process group when the pytest process that owns it dies uncleanly.

Run as ``python -m pytest_rocm_llm.serving.guardian OWNER_PID PGID`` inside the
server's process group.
A normal stop kills this process along with the group. If the owner is SIGKILLed (an xdist
worker crash, an OOM kill) nothing else would stop the server, so this does. It imports only
the standard library.
"""

from __future__ import annotations

import os
import signal
import sys
import time


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(owner: int, pgid: int, poll_s: float = 0.5, grace_s: float = 15.0) -> int:
    original_parent = os.getppid()
    while alive(owner) and os.getppid() == original_parent:
        time.sleep(poll_s)
    # The owner is gone without stopping the server: stop it the way the owner would.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return 0
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        # Only this guardian left in the group?
        others = [p for p in group_members(pgid) if p != os.getpid()]
        if not others:
            break
        time.sleep(0.2)
    os.killpg(pgid, signal.SIGKILL)  # includes this process
    return 0


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
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
