"""The one SSE reader, and both callers that go through it: the load generator's
``stream_request`` (timing records) and stream consistency's ``stream_generation`` (ids as
received). Broken streams a real server cannot produce on demand are played back by an
in-process httpx MockTransport."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from pytest_rocm_llm.client.completions import Endpoint
from pytest_rocm_llm.client.sse import StreamFailed, StreamTruncated, sse_events
from pytest_rocm_llm.correctness.stream_consistency import stream_generation


def sse(*events: object, done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return body + (b"data: [DONE]\n\n" if done else b"")


def mock(body: bytes, status: int = 200) -> httpx.AsyncClient:
    transport = httpx.MockTransport(lambda request: httpx.Response(status, content=body))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


def read(body: bytes, status: int = 200) -> list[dict]:
    async def go() -> list[dict]:
        async with mock(body, status) as client, client.stream("POST", "/x") as response:
            return [e async for e in sse_events(response)]

    return asyncio.run(go())


def test_events_up_to_done_and_other_lines_skipped() -> None:
    body = b": keep-alive\n\nevent: x\n" + sse({"a": 1}, {"a": 2}) + b"data: {\"late\": 1}\n\n"
    assert read(body) == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize(("body", "status", "error", "kind"), [
    (sse({"a": 1}, done=False), 200, "stream ended without [DONE] (truncated)",
     StreamTruncated),
    (b"", 200, "stream ended without [DONE] (truncated)", StreamTruncated),
    (b"data: {not json\n\n", 200, "malformed stream event: '{not json'", StreamFailed),
    (sse({"error": {"message": "boom"}}), 200, "error event: {'message': 'boom'}",
     StreamFailed),
    (b"Internal Server Error" * 40, 500, "HTTP 500: Internal Server Error", StreamFailed),
])
def test_a_broken_stream_is_one_error_in_words(body: bytes, status: int, error: str,
                                               kind: type) -> None:
    with pytest.raises(kind) as info:
        read(body, status)
    assert str(info.value).startswith(error)
    assert len(str(info.value)) <= len("HTTP 500: ") + 300  # a server's body is cut short


def generation(body: bytes, api: str = "generate", status: int = 200):
    async def go():
        async with mock(body, status) as client:
            return await stream_generation(client, Endpoint("http://test", api, "m"),
                                           [1, 2, 3], 4)

    return asyncio.run(go())


def gen_event(ids: list[int], completion_tokens: int, finish=None) -> dict:
    return {"output_ids": ids, "meta_info": {"completion_tokens": completion_tokens,
                                             "finish_reason": finish}}


def test_stream_generation_reads_cumulative_and_incremental_generate_streams() -> None:
    cumulative = generation(sse(gen_event([5], 1), gen_event([5, 6], 2),
                                gen_event([5, 6, 7], 3, {"type": "length"})))
    incremental = generation(sse(gen_event([5], 1), gen_event([6], 2),
                                 gen_event([7], 3, {"type": "length"})))
    for g in (cumulative, incremental):
        assert g.ok and g.token_ids == (5, 6, 7) and g.completion_tokens == 3
        assert g.finish_reason == "length"


def test_stream_generation_reads_completions_chunks_as_ids() -> None:
    chunks = [{"choices": [{"token_ids": [5], "finish_reason": None}]},
              {"choices": [{"logprobs": {"tokens": ["token_id:6"]}, "finish_reason": "stop"}]},
              {"choices": [], "usage": {"completion_tokens": 2}}]
    g = generation(sse(*chunks), api="completions")
    assert g.ok and g.token_ids == (5, 6) and g.completion_tokens == 2
    assert g.finish_reason == "stop"


@pytest.mark.parametrize(("body", "status", "error"), [
    (sse(gen_event([5], 1), done=False), 200, "stream ended without [DONE] (truncated)"),
    (b"data: {not json\n\n", 200, "malformed stream event"),
    (sse({"error": "overloaded"}), 200, "error event: overloaded"),
    (b"busy", 503, "HTTP 503: busy"),
])
def test_stream_generation_fails_broken_streams_as_the_load_generator_does(
        body: bytes, status: int, error: str) -> None:
    g = generation(body, status=status)
    assert not g.ok and g.error is not None and g.error.startswith(error)
    assert g.token_ids == ()
