"""An engine-agnostic async chat sampler over the OpenAI-compatible ``/v1/chat/completions``.

sglang and vLLM both serve this endpoint, so accuracy evals run unchanged on either. The
request and response fields follow sglang 0.5.23's own models
(``sglang/srt/entrypoints/openai/protocol.py``: ``ChatCompletionRequest``,
``ChatCompletionResponse``, ``ErrorResponse``):

- ``max_completion_tokens`` is the field sglang reads first (``max_tokens`` is deprecated
  there); both are sent with the same value so servers that know only one still cap output.
- ``seed`` becomes sglang's ``sampling_seed``.
- ``choices[0].finish_reason`` is one of stop, length, tool_calls, content_filter,
  function_call, abort; ``abort`` means the server gave up on the request, so it is a
  failed request, not an answer.
- errors come back as sglang's ``{"object": "error", "message": ...}`` or OpenAI/vLLM's
  ``{"error": {"message": ...}}``.

A failed request is a ``ChatAnswer`` with ``error`` set, never an exception: one bad request
must not kill an eval, and a failed request is never scored as a wrong answer.

A reasoning model's answer is ``message.content``; its thinking is ``reasoning_content``
(sglang with ``--reasoning-parser``, ``separate_reasoning`` true by default) and is kept
apart: a trace cut at ``max_tokens`` leaves no final answer, which must score as no answer,
never as the last number of the trace. Thinking left inline (a server without a reasoning
parser) is cut off the same way (``final_content``). ``tool_calls`` (sglang with
``--tool-call-parser``) are kept as sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from pytest_rocm_llm.client.request_bodies import PATHS, chat_body
from pytest_rocm_llm.excerpt import clip
from pytest_rocm_llm.http import async_client

Message = Mapping[str, str]  # {"role": "user", "content": "..."}


@dataclass(frozen=True)
class ChatAnswer:
    """One chat completion's answer, or why there is none (``error``)."""

    text: str
    finish_reason: str | None
    completion_tokens: int | None
    error: str | None = None  # set when the request failed; text is then ""
    reasoning: str = ""  # the thinking, apart from the scored text
    tool_calls: tuple[Mapping[str, Any], ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None


def _server_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return clip(response.text)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and "message" in err:
            return clip(str(err["message"]))
        if "message" in body:
            return clip(str(body["message"]))
    return clip(str(body))


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def final_content(content: str) -> tuple[str, str]:
    """(answer, inline reasoning) of a message's content. GLM's template opens ``<think>``
    in the prompt, so a generation without a reasoning parser reads "trace</think>answer";
    an opened and never closed ``<think>`` is a trace cut short: no answer."""
    if THINK_CLOSE in content:
        thought, _, answer = content.rpartition(THINK_CLOSE)
        return answer.strip(), thought.replace(THINK_OPEN, "", 1).strip()
    if THINK_OPEN in content:
        return "", content.split(THINK_OPEN, 1)[1].strip()
    return content, ""


class ChatSampler:
    """``await sampler(messages) -> ChatAnswer``; use ``async with`` or ``await aclose()``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        max_tokens: int,
        temperature: float = 0.0,
        seed: int | None = None,
        timeout_s: float = 600.0,
        headers: Mapping[str, str] | None = None,
        stop: Sequence[str] = (),
        chat_template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.timeout_s = timeout_s
        self.stop = tuple(stop)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._headers = dict(headers or {})  # may hold an API key: never logged
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def payload(self, messages: Sequence[Message]) -> dict[str, Any]:
        return chat_body(messages, model=self.model, max_tokens=self.max_tokens,
                         temperature=self.temperature, seed=self.seed, stop=self.stop,
                         chat_template_kwargs=self.chat_template_kwargs)

    def _http(self) -> httpx.AsyncClient:
        # An AsyncClient belongs to the event loop it was first used in; a sampler reused
        # under a new asyncio.run gets a fresh one.
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = async_client(self.base_url, timeout_s=self.timeout_s,
                                        headers=self._headers)
            self._loop = loop
        return self._client

    async def __call__(self, messages: Sequence[Message]) -> ChatAnswer:
        try:
            r = await self._http().post(PATHS["chat"], json=self.payload(messages))
        except httpx.TimeoutException:
            return ChatAnswer("", None, None, f"no answer within {self.timeout_s:g} s")
        except httpx.HTTPError as exc:
            return ChatAnswer("", None, None, clip(f"{type(exc).__name__}: {exc}"))
        if r.status_code != 200:
            return ChatAnswer("", None, None, f"HTTP {r.status_code}: {_server_message(r)}")
        try:
            body = r.json()
            choice = body["choices"][0]
            finish = choice.get("finish_reason")
            message = choice.get("message") or {}
            text, inline = final_content(message.get("content") or "")
            reasoning = message.get("reasoning_content") or inline
            calls = tuple(message.get("tool_calls") or ())
            usage = body.get("usage") or {}
            tokens = usage.get("completion_tokens")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return ChatAnswer("", None, None, f"malformed response: {clip(r.text)}")
        if finish == "abort":
            return ChatAnswer(text, finish, tokens, "the server aborted the request")
        return ChatAnswer(text, finish, tokens if isinstance(tokens, int) else None,
                          reasoning=str(reasoning), tool_calls=calls)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> ChatSampler:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:  # no headers: they may carry an API key
        return f"ChatSampler({self.base_url!r}, model={self.model!r})"
