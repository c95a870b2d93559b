"""Stream parsing. Normal streams are checked against real sglang in the engine tests; the
broken ones here (truncated, malformed, error events, 5xx, empty) cannot be produced by a real
server on demand, so an in-process httpx MockTransport plays them back."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from pytest_rocm_llm.client.records import RequestRecord
from pytest_rocm_llm.client.streaming import build_payload, stream_request


def sse(*events: object, done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return body + (b"data: [DONE]\n\n" if done else b"")


def gen_event(n: int, *, prompt: int = 8, cached: int = 3, verify: int | None = None,
              finish=None) -> dict:
    meta = {"prompt_tokens": prompt, "completion_tokens": n, "cached_tokens": cached,
            "finish_reason": finish}
    if verify is not None:
        meta["spec_verify_ct"] = verify
    return {"text": "x" * n, "meta_info": meta}


def run(body: bytes, status: int = 200, api: str = "generate") -> RequestRecord:
    transport = httpx.MockTransport(lambda request: httpx.Response(status, content=body))

    async def go() -> RequestRecord:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            path, payload = build_payload(api, [5, 6, 7, 8], 3, "m")
            rec = RequestRecord(index=0, send_s=0.0, expected_output_tokens=3,
                                expected_prompt_tokens=4)
            return await stream_request(client, api, path, payload, rec, 0.0)

    return asyncio.run(go())


def test_generate_stream_fills_the_record() -> None:
    r = run(sse(gen_event(1), gen_event(2), gen_event(3, verify=2,
                                                      finish={"type": "length"})))
    assert r.ok and r.error is None
    assert (r.prompt_tokens, r.cached_tokens, r.completion_tokens) == (8, 3, 3)
    assert r.spec_verify_ct == 2 and r.finish_reason == "length"
    assert r.ttft_s is not None and r.e2e_s is not None and r.e2e_s >= r.ttft_s
    assert [tokens for _, tokens in r.chunk_gaps] == [1, 1]


def test_a_chunk_with_several_tokens_is_one_gap_of_several() -> None:
    r = run(sse(gen_event(1), gen_event(4)))
    assert r.ok and [tokens for _, tokens in r.chunk_gaps] == [3]


@pytest.mark.parametrize(("body", "status", "error"), [
    (sse(gen_event(1), gen_event(2), done=False), 200, "stream ended without [DONE]"),
    (b"data: {not json\n\n", 200, "malformed stream event"),
    (sse({"error": {"message": "boom"}}), 200, "error event"),
    (b"Internal Server Error", 500, "HTTP 500"),
    (sse(), 200, "stream carried no tokens"),
    (b"", 200, "stream ended without [DONE]"),
])
def test_broken_streams_are_failed_requests(body: bytes, status: int, error: str) -> None:
    r = run(body, status)
    assert not r.ok and error in (r.error or "")
    # never zero latency or infinite throughput
    assert r.output_speed_tok_s is None and r.tpot_s is None


def test_openai_completions_stream_uses_the_usage_chunk() -> None:
    chunks = [{"choices": [{"text": "a", "finish_reason": None}]},
              {"choices": [{"text": "b", "finish_reason": None}]},
              {"choices": [{"text": "c", "finish_reason": "length"}]},
              {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 3,
                                        "prompt_tokens_details": {"cached_tokens": 2}}}]
    r = run(sse(*chunks), api="completions")
    assert r.ok and r.text == "abc" and r.finish_reason == "length"
    assert (r.prompt_tokens, r.completion_tokens, r.cached_tokens) == (4, 3, 2)


def test_payload_forces_the_output_length() -> None:
    path, body = build_payload("generate", [1, 2], 7, "m")
    sp = body["sampling_params"]
    assert path == "/generate" and body["input_ids"] == [1, 2] and body["stream"] is True
    assert sp["max_new_tokens"] == 7 and sp["ignore_eos"] is True
    path, body = build_payload("completions", [1, 2], 7, "m")
    assert path == "/v1/completions" and body["prompt"] == [1, 2]
    assert body["max_tokens"] == 7 and body["stream_options"] == {"include_usage": True}
