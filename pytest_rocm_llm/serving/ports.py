"""Claim free TCP ports so that servers started by parallel workers never collide.

Ports are drawn below the kernel's ephemeral range: a server binds its HTTP port only after
loading its model (tens of seconds on the CPU reference, minutes on a GPU node), and in that
window any socket bound to port 0, the loading server's own gloo/ZMQ sockets included, could
be handed an ephemeral port we had probed free. Seen in CI: sglang's HTTP bind failed with
"address already in use", its warm-up then polled a socket of its own that never answered,
and the launch hung for 12 minutes. The claim is made atomic across processes with an
exclusively created lock file holding the owner's pid, since nothing holds the port between
the claim and the server's bind. A claim whose owner is dead is stale: it is taken over, and
it does not keep neighbouring ports from being claimed.
"""

from __future__ import annotations

import errno
import os
import random
import tempfile
from pathlib import Path

from pytest_rocm_llm.serving.guardian import alive
from pytest_rocm_llm.sockets import bind_error

LOCK_DIR = Path(tempfile.gettempdir()) / "pytest-rocm-llm-ports"
# sglang opens helper ports above its HTTP port (e.g. its NCCL/dist-init port), so claims
# keep a gap between servers.
SPACING = 50
# Where ports are drawn when the OS does not say its ephemeral range (Linux's default starts
# at 32768; sglang's helper ports sit up to ~1000 above the HTTP port).
FALLBACK_RANGE = (20000, 31000)
HELPER_REACH = 1100


def claimable_range() -> tuple[int, int]:
    """[low, high) of ports to draw from: below the ephemeral range, above the well-known
    and registered ports most services use."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return FALLBACK_RANGE
    if low - HELPER_REACH <= FALLBACK_RANGE[0] + SPACING:
        return FALLBACK_RANGE  # an unusually low ephemeral range: keep the fixed one
    return FALLBACK_RANGE[0], low - HELPER_REACH


def bindable(host: str, port: int) -> bool:
    return bind_error(host, port) is None


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
    low, high = claimable_range()
    for _ in range(attempts):
        port = random.randrange(low, high)
        if _near_claimed(port):
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
