"""Stream consistency checks after MLPerf Inference's TEST06 for LLMs.

TEST06 checks that a streamed answer is the answer: the first streamed token equals the
first token of the full (non-streamed) output, there is at most one EOS, and the reported
output token count equals the tokens actually received. A build that streams a token it
later replaces, or counts tokens it never sent, passes a throughput check and fails this.

Streams are read as ids (never re-tokenized text): sglang's ``/generate`` events carry
``output_ids`` -- cumulative by default, a delta with ``--incremental-streaming-output`` --
told apart by ``meta_info.completion_tokens`` (always cumulative); vLLM's completions
chunks carry ``choices[0].token_ids`` (``return_token_ids``) or ``"token_id:<id>"`` tokens.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Collection, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import httpx

from pytest_rocm_llm.client.completions import (
    Endpoint,
    GreedyGeneration,
    client_for,
    failed,
    generate,
    request_body,
    token_id,
)
from pytest_rocm_llm.client.sse import StreamFailed, sse_events


@dataclass(frozen=True)
class StreamCheck:
    prompt_id: str
    full: GreedyGeneration  # the non-streamed greedy output
    streamed: GreedyGeneration  # token_ids as received; completion_tokens as reported
    eos_count: int

    @property
    def problems(self) -> tuple[str, ...]:
        """Why the two outputs cannot be compared (a failed request)."""
        out = []
        for what, g in (("full", self.full), ("streamed", self.streamed)):
            if g.error is not None:
                out.append(f"{self.prompt_id}: {what} request failed: {g.error}")
        return tuple(out)

    @property
    def violations(self) -> tuple[str, ...]:
        """Each TEST06 rule the stream broke, in words."""
        if self.problems:
            return ()
        out = []
        first = self.streamed.token_ids[0] if self.streamed.token_ids else None
        if first != self.full.token_ids[0]:
            out.append(f"{self.prompt_id}: first streamed token {first} != first token "
                       f"{self.full.token_ids[0]} of the full output")
        if self.eos_count > 1:
            out.append(f"{self.prompt_id}: {self.eos_count} EOS tokens in the stream "
                       "(at most one allowed)")
        received = len(self.streamed.token_ids)
        if self.streamed.completion_tokens != received:
            out.append(f"{self.prompt_id}: reported {self.streamed.completion_tokens} "
                       f"completion tokens, received {received}")
        return tuple(out)


def _ids_from_chunk(choice: Mapping[str, Any]) -> list[int]:
    if choice.get("token_ids") is not None:
        return [int(i) for i in choice["token_ids"]]
    lp = choice.get("logprobs") or {}
    return [token_id(t) for t in lp.get("tokens") or ()]


async def stream_generation(client: httpx.AsyncClient, endpoint: Endpoint,
                            prompt_ids: Sequence[int], max_tokens: int) -> GreedyGeneration:
    """One greedy streamed request: the ids as received and the count the server reported."""
    path, body = request_body(endpoint.api, prompt_ids, max_tokens, 0, endpoint.model,
                              stream=True)
    ids: list[int] = []
    reported = 0
    finish: str | None = None
    start = time.perf_counter()
    try:
        async with client.stream("POST", path, json=body) as response:
            async with aclosing(sse_events(response)) as events:
                async for event in events:
                    if endpoint.api == "generate":
                        reported = _generate_event(event, ids, reported)
                        f = (event.get("meta_info") or {}).get("finish_reason")
                        if f is not None:
                            finish = str(f.get("type")) if isinstance(f, dict) else str(f)
                    else:
                        usage = event.get("usage")
                        if usage:
                            reported = int(usage.get("completion_tokens") or 0)
                        for choice in event.get("choices") or ():
                            ids.extend(_ids_from_chunk(choice))
                            if choice.get("finish_reason"):
                                finish = str(choice["finish_reason"])
    except StreamFailed as exc:
        return failed(str(exc))
    except (httpx.HTTPError, ValueError) as exc:
        return failed(f"{type(exc).__name__}: {exc}")
    return GreedyGeneration(tuple(ids), tuple(None for _ in ids), (), finish, reported, None,
                            latency_s=time.perf_counter() - start)


def _generate_event(event: Mapping[str, Any], ids: list[int], reported: int) -> int:
    """Add one /generate event's ids to ``ids``; returns the count the server reports."""
    chunk = [int(i) for i in event.get("output_ids") or ()]
    reported = int((event.get("meta_info") or {}).get("completion_tokens", reported))
    # Cumulative streams resend every id so far; incremental ones a delta.
    if len(chunk) == reported and len(chunk) >= len(ids):
        ids[:] = chunk
    else:
        ids.extend(chunk)
    return reported


async def check_streams(endpoint: Endpoint, prompts: Sequence[tuple[str, Sequence[int]]],
                        max_tokens: int, eos_ids: Collection[int]) -> list[StreamCheck]:
    """For each prompt, a full and a streamed greedy generation compared by TEST06's rules.
    Without ``ignore_eos`` so that a stream running past its EOS shows up."""
    out = []
    async with client_for(endpoint) as client:
        for pid, ids in prompts:
            full = await generate(client, endpoint, ids, max_tokens)
            streamed = await stream_generation(client, endpoint, ids, max_tokens)
            eos = sum(1 for t in streamed.token_ids if t in eos_ids)
            out.append(StreamCheck(pid, full, streamed, eos))
    return out


def check_streams_sync(endpoint: Endpoint, prompts: Sequence[tuple[str, Sequence[int]]],
                       max_tokens: int, eos_ids: Collection[int]) -> list[StreamCheck]:
    return asyncio.run(check_streams(endpoint, prompts, max_tokens, eos_ids))


def eos_ids(model_dir: str) -> frozenset[int]:
    """The model's EOS ids, from generation_config.json (``eos_token_id``: int or list)."""
    from pathlib import Path

    path = Path(model_dir) / "generation_config.json"
    if not path.is_file():
        return frozenset()
    value = json.loads(path.read_text()).get("eos_token_id")
    if value is None:
        return frozenset()
    return frozenset([value] if isinstance(value, int) else value)
