"""The one HTTP client factory: timeouts, connection limits and the API key, which goes in a
header and nowhere a person reads."""

from __future__ import annotations

import asyncio
import sys

import httpx
import pytest

from pytest_rocm_llm.client.chat import ChatSampler
from pytest_rocm_llm.client.completions import Endpoint, client_for
from pytest_rocm_llm.http import (
    API_KEY_ENV,
    CONNECT_S,
    async_client,
    request_headers,
    sync_client,
)

KEY = "sk-test-0123456789abcdef"


def test_timeouts_and_limits() -> None:
    client = async_client("http://x", timeout_s=42.0, in_flight=3)
    assert client.timeout == httpx.Timeout(42.0, connect=CONNECT_S)
    pool = client._transport._pool  # type: ignore[attr-defined]
    assert pool._max_connections == 7 and pool._max_keepalive_connections == 7
    unbounded = async_client("http://x", timeout_s=1.0)._transport._pool  # type: ignore
    assert unbounded._max_connections == sys.maxsize  # httpcore's 'no cap'
    assert sync_client(timeout_s=5.0, connect_s=2.0).timeout == httpx.Timeout(5.0, connect=2.0)


def test_api_key_from_the_environment_unless_a_header_is_given() -> None:
    assert request_headers({}, {API_KEY_ENV: KEY}) == {"Authorization": f"Bearer {KEY}"}
    mine = {"authorization": "Bearer other"}
    assert request_headers(mine, {API_KEY_ENV: KEY}) == mine
    assert request_headers({"X": "1"}, {}) == {"X": "1"}


def test_every_request_client_sends_the_key_and_no_repr_shows_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(API_KEY_ENV, KEY)
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"choices": [{"message": {"content": "4"},
                                                       "finish_reason": "stop"}]})

    sampler = ChatSampler("http://test", "m", 8)

    async def go() -> None:
        sampler._http()._transport = httpx.MockTransport(answer)  # type: ignore[attr-defined]
        assert (await sampler([{"role": "user", "content": "2+2"}])).text == "4"
        await sampler.aclose()
        async with client_for(Endpoint("http://test")) as client:
            client._transport = httpx.MockTransport(answer)  # type: ignore[attr-defined]
            await client.post("/generate", json={})

    asyncio.run(go())
    assert seen == [f"Bearer {KEY}"] * 2
    secret = Endpoint("http://test", headers={"Authorization": f"Bearer {KEY}"})
    assert KEY not in repr(secret) and KEY not in repr(sampler)
