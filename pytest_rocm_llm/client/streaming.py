"""Async streaming requests to an engine, one ``RequestRecord`` each.

APIs (read from sglang 0.5.23's http_server and bench_serving):
- ``generate``: sglang's native ``POST /generate`` with ``stream: true``; each SSE event is
  ``data: {json}`` whose ``meta_info`` carries prompt_tokens, completion_tokens (cumulative),
  cached_tokens, spec_verify_ct, finish_reason; the stream ends with ``data: [DONE]``.
- ``completions`` / ``chat``: OpenAI-style ``/v1/completions`` and ``/v1/chat/completions``
  with ``stream_options.include_usage`` (final usage chunk: prompt/completion tokens and
  ``prompt_tokens_details.cached_tokens``); each content chunk counts as one token.

A stream that breaks off before ``[DONE]``, carries no token, returns an error event or a
non-200 status is a failed request: it never counts as zero latency or infinite speed.
"""

from __future__ import annotations

import time
from contextlib import aclosing
from typing import Any

import httpx

from pytest_rocm_llm.client.records import RequestRecord
from pytest_rocm_llm.client.request_bodies import token_request
from pytest_rocm_llm.client.sse import StreamFailed, StreamTruncated, sse_events
from pytest_rocm_llm.excerpt import clip
from pytest_rocm_llm.serving.speculation import verify_steps


def build_payload(api: str, prompt_ids: list[int], output_tokens: int, model: str,
                  extra: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """Path and JSON body of a greedy streamed request forced to ``output_tokens`` tokens.
    ignore_eos alone forces the length (the precondition checks it); min_new_tokens would
    also switch on sglang's min-tokens penalizer, which costs time per step."""
    path, body = token_request(api, prompt_ids, output_tokens, model=model, stream=True,
                               ignore_eos=True)
    if extra:
        body.update(extra)
    return path, body


def _finish(meta_finish: Any) -> str | None:
    if isinstance(meta_finish, dict):
        return str(meta_finish.get("type"))
    return None if meta_finish is None else str(meta_finish)


class TokenClock:
    """Token progress across a workload's requests, for the stall watchdog: how long requests
    have been in flight since any of them last received a token.

    The streams store one timestamp per token-bearing chunk (``last_token``) and nothing
    else; the accounting runs at each request's start and end and at each watchdog poll.
    Only in-flight time counts, so a pause between requests is not a stall, while requests
    that each time out without a token add up (a hung server behind per-request timeouts).
    """

    __slots__ = ("last_token", "in_flight", "_mark", "_stalled_s")

    def __init__(self, now: float) -> None:
        self.last_token = now
        self.in_flight = 0
        self._mark = now
        self._stalled_s = 0.0

    def stalled_s(self, now: float) -> float:
        """In-flight seconds without a token, up to ``now`` (perf_counter)."""
        if self.last_token > self._mark:
            self._stalled_s, self._mark = 0.0, self.last_token
        if self.in_flight and now > self._mark:
            self._stalled_s += now - self._mark
        self._mark = max(self._mark, now)
        return self._stalled_s

    def begin(self) -> None:
        self.stalled_s(time.perf_counter())
        self.in_flight += 1

    def end(self) -> None:
        self.stalled_s(time.perf_counter())
        self.in_flight -= 1


async def stream_request(client: httpx.AsyncClient, api: str, path: str, body: dict[str, Any],
                         record: RequestRecord, t0: float,
                         clock: TokenClock | None = None) -> RequestRecord:
    """Send one request and fill ``record`` as chunks arrive. ``t0``: workload start;
    ``clock``: told when a token arrives."""
    start = time.perf_counter()
    record.send_s = start - t0
    last = start
    tokens = 0
    try:
        async with client.stream("POST", path, json=body) as response:
            record.status = response.status_code
            async with aclosing(sse_events(response)) as events:
                async for event in events:
                    now = time.perf_counter()
                    record.chunks += 1
                    new = _consume(api, event, record) - tokens
                    if new > 0:
                        if tokens == 0:
                            record.ttft_s = now - start
                        else:
                            record.chunk_gaps.append((now - last, new))
                        tokens += new
                        last = now
                        if clock is not None:
                            clock.last_token = now
    except StreamTruncated as exc:
        record.error = str(exc)  # what arrived still has its timing
    except StreamFailed as exc:
        record.error = str(exc)
        return record
    except httpx.HTTPError as exc:
        record.error = clip(f"{type(exc).__name__}: {exc}")
        return record
    record.e2e_s = last - start if tokens else None
    if record.error is not None:
        return record
    if tokens == 0:
        record.error = "stream carried no tokens"
    else:
        if record.completion_tokens == 0:
            record.completion_tokens = tokens
        record.ok = True
    return record


def _consume(api: str, event: dict[str, Any], record: RequestRecord) -> int:
    """Update ``record`` from one event; returns the tokens received so far."""
    if api == "generate":
        meta = event.get("meta_info") or {}
        record.prompt_tokens = int(meta.get("prompt_tokens", record.prompt_tokens))
        record.completion_tokens = int(meta.get("completion_tokens", record.completion_tokens))
        if meta.get("cached_tokens") is not None:
            record.cached_tokens = int(meta["cached_tokens"])
        steps, _ = verify_steps(meta, record.completion_tokens)
        if steps is not None:  # whichever sglang 0.5.x field names are present
            record.spec_verify_ct = steps
        if meta.get("finish_reason") is not None:
            record.finish_reason = _finish(meta["finish_reason"])
        record.text = event.get("text", record.text)
        return record.completion_tokens
    usage = event.get("usage")
    if usage:
        record.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        record.completion_tokens = int(usage.get("completion_tokens") or 0)
        details = usage.get("prompt_tokens_details") or {}
        if details.get("cached_tokens") is not None:
            record.cached_tokens = int(details["cached_tokens"])
    for choice in event.get("choices") or []:
        piece = choice.get("text")
        if piece is None:
            piece = (choice.get("delta") or {}).get("content")
        if piece:
            record.text += piece
            record.content_chunks += 1
        if choice.get("finish_reason"):
            record.finish_reason = str(choice["finish_reason"])
    return record.content_chunks
