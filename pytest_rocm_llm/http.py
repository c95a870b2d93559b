"""The one place HTTP clients to engine servers are made: timeouts, connection limits and
headers (an API key among them) chosen once.

It sits at the top of the package, beside ``errors`` and ``redact``, because every layer
that speaks to a server needs it: serving (health probes, ``/server_info``, ``/v1/models``),
client (generation, chat, streams) and performance (the load generator).

A server started with ``--api-key`` refuses requests without ``Authorization: Bearer <key>``;
the key is read from ``PYTEST_ROCM_LLM_API_KEY`` when the caller passes no such header. It
travels in headers only: no URL, repr, message or log line of ours carries it (httpx logs
request lines, never headers).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx

API_KEY_ENV = "PYTEST_ROCM_LLM_API_KEY"
# A server that does not accept a connection within this is down or unreachable; reading an
# answer may take far longer (a long generation), which is the caller's ``timeout_s``.
CONNECT_S = 10.0
# Spare connections beyond the requests a caller keeps in flight: a warm-up or a probe may
# overlap the last requests of a batch without waiting for a slot.
SPARE_CONNECTIONS = 4
# Without a stated concurrency (a semaphore bounds it elsewhere): no cap, and enough kept
# alive that a batch of requests reuses its connections.
KEEPALIVE = 64


def request_headers(headers: Mapping[str, str] | None = None,
                    environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``headers``, plus the API key from the environment when none is given."""
    out = dict(headers or {})
    key = (os.environ if environ is None else environ).get(API_KEY_ENV)
    if key and not any(k.lower() == "authorization" for k in out):
        out["Authorization"] = f"Bearer {key}"
    return out


def _limits(in_flight: int | None) -> httpx.Limits:
    if in_flight is None:
        return httpx.Limits(max_connections=None, max_keepalive_connections=KEEPALIVE)
    n = max(in_flight, 1) + SPARE_CONNECTIONS
    return httpx.Limits(max_connections=n, max_keepalive_connections=n)


def _timeout(timeout_s: float, connect_s: float | None) -> httpx.Timeout:
    return httpx.Timeout(timeout_s, connect=CONNECT_S if connect_s is None else connect_s)


def async_client(base_url: str = "", *, timeout_s: float, in_flight: int | None = None,
                 headers: Mapping[str, str] | None = None,
                 connect_s: float | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """An async client for requests to ``base_url``; ``in_flight``: the most requests the
    caller keeps open at once (None: bounded elsewhere). ``transport``: tests' stand-ins."""
    return httpx.AsyncClient(base_url=base_url, headers=request_headers(headers),
                             timeout=_timeout(timeout_s, connect_s),
                             limits=_limits(in_flight), transport=transport)


def sync_client(base_url: str = "", *, timeout_s: float,
                headers: Mapping[str, str] | None = None,
                connect_s: float | None = None,
                transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """A synchronous client for requests to ``base_url`` (probes, fixtures, small calls)."""
    return httpx.Client(base_url=base_url, headers=request_headers(headers),
                        timeout=_timeout(timeout_s, connect_s), transport=transport)
