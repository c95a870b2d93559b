"""Claim free TCP ports so that servers started by parallel workers never collide.

The kernel picks a free port (bind to 0); the claim is then made atomic across processes
with an exclusively created lock file holding the owner's pid, since the kernel forgets the
port the moment the probe socket closes. A claim whose owner is dead is stale: it is taken
over, and it does not keep neighbouring ports from being claimed.
"""

from __future__ import annotations

import errno
import os
import socket
import tempfile
from pathlib import Path

from pytest_rocm_llm.serving.guardian import alive

LOCK_DIR = Path(tempfile.gettempdir()) / "pytest-rocm-llm-ports"
# sglang opens helper ports above its HTTP port (e.g. its NCCL/dist-init port), so claims
# keep a gap between servers.
SPACING = 50


def bindable(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host if host != "localhost" else "127.0.0.1", port))
        except OSError:
            return False
    return True


def _try_lock(port: int) -> bool:
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    path = LOCK_DIR / f"{port}.lock"
    # The claim appears with its owner's pid already in it (hard link of a written file), so
    # no other process can ever read an empty claim and take it for a stale one.
    tmp = LOCK_DIR / f".{port}.{os.getpid()}.tmp"
    tmp.write_text(str(os.getpid()))
    try:
        for _ in range(2):
            try:
                os.link(tmp, path)
            except FileExistsError:
                if _live(path):
                    return False
                path.unlink(missing_ok=True)  # stale claim of a dead process
                continue
            return True
        return False
    finally:
        tmp.unlink(missing_ok=True)


def _owner(lock: Path) -> int:
    try:
        return int(lock.read_text().strip() or "0")
    except (OSError, ValueError):
        return 0


def _live(lock: Path) -> bool:
    """A claim whose owner process still runs (an unreadable claim counts as stale)."""
    owner = _owner(lock)
    return owner > 0 and alive(owner)


def _near_claimed(port: int) -> bool:
    """Another live claim within SPACING of ``port`` (claims of dead processes are stale,
    e.g. left by a SIGKILLed run, and do not count)."""
    if not LOCK_DIR.is_dir():
        return False
    for lock in LOCK_DIR.glob("*.lock"):
        try:
            other = int(lock.stem)
        except ValueError:
            continue
        if other != port and abs(other - port) < SPACING and _live(lock):
            return True
    return False


def claim_port(host: str = "127.0.0.1", attempts: int = 200) -> int:
    """A port free on ``host`` and claimed for this process until ``release_port``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(attempts):
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host if host != "localhost" else "127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port + SPACING > 65535 or _near_claimed(port):
            continue
        if _try_lock(port):
            if bindable(host, port):
                return port
            release_port(port)
    raise OSError(errno.EADDRINUSE, f"no free port could be claimed on {host}")


def release_port(port: int) -> None:
    path = LOCK_DIR / f"{port}.lock"
    if _owner(path) == os.getpid():
        path.unlink(missing_ok=True)
