"""Whether this machine can listen at an address: asked when ``--llm-host`` is read (before
any server starts) and when a server's port is claimed."""

from __future__ import annotations

import socket


def bind_error(host: str, port: int) -> OSError | None:
    """Why a socket cannot bind ``host``:``port`` here (port 0: any port), or None."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host if host != "localhost" else "127.0.0.1", port))
        except OSError as exc:
            return exc
    return None
