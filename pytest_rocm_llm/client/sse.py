"""The one reader of server-sent event streams, as sglang's ``/generate`` and the OpenAI
``/v1/completions`` and ``/v1/chat/completions`` send them: ``data: {json}`` lines, ending
with ``data: [DONE]``.

Every way a stream breaks is a ``StreamFailed`` whose text is the request's error: a
non-200 status (with the start of the server's body), a line that is not JSON, an error
event, and a stream that ends before ``[DONE]`` (``StreamTruncated``, so a caller can keep
what arrived before). The loop runs once per token in the load generator, so it does no more
per event than the inline loops it replaced: no object beyond the parsed event, no logging.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from pytest_rocm_llm.excerpt import clip

DONE = "[DONE]"
TRUNCATED = "stream ended without [DONE] (truncated)"
EVENT_CHARS = 120  # of a malformed event, quoted in the error


class StreamFailed(Exception):
    """The stream did not deliver a whole answer; ``str(exc)`` says how."""


class StreamTruncated(StreamFailed):
    """The stream ended before ``[DONE]``: what arrived is not the whole answer."""

    def __init__(self) -> None:
        super().__init__(TRUNCATED)


async def sse_events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """Each event of a streamed ``response`` as parsed JSON, up to ``[DONE]``."""
    if response.status_code != 200:
        text = (await response.aread()).decode(errors="replace")
        raise StreamFailed(f"HTTP {response.status_code}: {clip(text)}")
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == DONE:
            return
        try:
            event = json.loads(data)
        except json.JSONDecodeError:
            raise StreamFailed(f"malformed stream event: {data[:EVENT_CHARS]!r}") from None
        if "error" in event:
            raise StreamFailed(f"error event: {clip(str(event['error']))}")
        yield event
    raise StreamTruncated()
