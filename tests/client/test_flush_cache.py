"""/flush_cache as sglang 0.5.23 answers it (entrypoints/http_server.py flush_cache;
scheduler_components/flush_wrapper.py): asked with a timeout so a busy server waits for idle
instead of refusing, and a refusal (HTTP 400 with sglang's reason) raised, never ignored.
Recorded response bodies through httpx's mock transport: the real endpoint runs in the
smoke suite's prefix-cache test on the CPU reference."""

from __future__ import annotations

import httpx
import pytest

from pytest_rocm_llm.client.generate import CacheNotFlushed, LLMClient
from pytest_rocm_llm.serving.server import LLMServer

OK = ("Cache flushed.\nPlease check backend logs for more details. (When there are running "
      "or waiting requests, the operation will not be performed.)\n")


def client(status: int, text: str, seen: list[httpx.Request]) -> LLMClient:
    server = LLMServer("glm52", "reference", "http://127.0.0.1:1", "sglang", "m", "/m", (), {},
                       "0.5.23")
    c = LLMClient(server)

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, text=text)

    c._http._transport = httpx.MockTransport(answer)  # type: ignore[attr-defined]
    return c


def test_flush_waits_for_idle_and_a_refusal_raises() -> None:
    seen: list[httpx.Request] = []
    client(200, OK, seen).flush_cache(timeout_s=45)
    assert seen[0].method == "POST" and seen[0].url.path == "/flush_cache"
    assert seen[0].url.params["timeout"] == "45"
    with pytest.raises(CacheNotFlushed, match=r"glm52/reference: /flush_cache refused "
                                              r"\(HTTP 400\): Timed out waiting for idle"):
        client(400, "Timed out waiting for idle state.", seen).flush_cache()
