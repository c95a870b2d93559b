"""The JSON body of each endpoint shape we send, built in one place.

Fields follow sglang 0.5.23 (``GenerateReqInput``, ``ChatCompletionRequest``) and vLLM's
OpenAI server:

- ``/generate`` (sglang native): ``input_ids`` or ``text``, ``sampling_params``; with
  logprobs, ``return_logprob``, ``top_logprobs_num`` and ``logprob_start_len`` -1 (no prompt
  logprobs: only output positions are compared).
- ``/v1/completions``: ``prompt`` as a list of ids; with logprobs, ``logprobs=k``,
  ``return_tokens_as_token_ids`` and ``return_token_ids`` (vLLM >= 0.10.2), so tokens come
  back as ids, never as text to re-tokenize; a stream asks for the final usage chunk.
- ``/v1/chat/completions``: ``max_completion_tokens`` is the field sglang reads first
  (``max_tokens`` is deprecated there); both are sent so a server knowing one still caps
  the output. ``seed`` becomes sglang's ``sampling_seed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The APIs that take a prompt as token ids (token-exact lengths, ids back).
TOKEN_APIS = ("generate", "completions")
PATHS = {"generate": "/generate", "completions": "/v1/completions",
         "chat": "/v1/chat/completions"}


def generate_body(input_ids: list[int] | None = None, *, text: str | None = None,
                  max_new_tokens: int, temperature: float = 0.0, ignore_eos: bool = False,
                  stream: bool = False, top_logprobs: int | None = None,
                  sampling: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """sglang ``/generate``: exactly one of ``input_ids`` and ``text``; ``top_logprobs``
    None asks for no logprobs, 0 for the chosen token's only."""
    if (text is None) == (input_ids is None):
        raise ValueError("pass exactly one of text or input_ids")
    body: dict[str, Any] = {"text": text} if text is not None else {"input_ids": input_ids}
    body["sampling_params"] = {"max_new_tokens": max_new_tokens, "temperature": temperature,
                               "ignore_eos": ignore_eos, **(sampling or {})}
    if top_logprobs is not None:
        body.update(return_logprob=True, top_logprobs_num=top_logprobs, logprob_start_len=-1)
    body["stream"] = stream
    return body


def completions_body(prompt_ids: list[int], *, model: str, max_tokens: int,
                     temperature: float = 0.0, ignore_eos: bool = False,
                     stream: bool = False, top_logprobs: int | None = None) -> dict[str, Any]:
    """OpenAI ``/v1/completions`` with the prompt as ids."""
    body: dict[str, Any] = {"model": model, "prompt": prompt_ids, "max_tokens": max_tokens,
                            "temperature": temperature, "ignore_eos": ignore_eos,
                            "stream": stream}
    if top_logprobs is not None:
        body.update(logprobs=top_logprobs, return_tokens_as_token_ids=True,
                    return_token_ids=True)
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def chat_body(messages: Sequence[Mapping[str, str]], *, model: str, max_tokens: int,
              temperature: float = 0.0, seed: int | None = None, stop: Sequence[str] = (),
              stream: bool = False,
              chat_template_kwargs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """OpenAI ``/v1/chat/completions``. ``chat_template_kwargs`` reach the model's chat
    template (sglang and vLLM both read the field): a reasoning model's thinking mode is
    set there, and a template that sees none picks its own default."""
    body: dict[str, Any] = {
        "model": model, "messages": [dict(m) for m in messages],
        "max_completion_tokens": max_tokens, "max_tokens": max_tokens,
        "temperature": temperature, "stream": stream,
    }
    if seed is not None:
        body["seed"] = seed
    if stop:
        body["stop"] = list(stop)
    if chat_template_kwargs:
        body["chat_template_kwargs"] = dict(chat_template_kwargs)
    return body


def token_request(api: str, prompt_ids: list[int], max_tokens: int, *, model: str = "",
                  stream: bool = False, ignore_eos: bool = False,
                  top_logprobs: int | None = None) -> tuple[str, dict[str, Any]]:
    """Path and body of a greedy request for ``prompt_ids`` on a token API."""
    if api == "generate":
        return PATHS[api], generate_body(prompt_ids, max_new_tokens=max_tokens,
                                         ignore_eos=ignore_eos, stream=stream,
                                         top_logprobs=top_logprobs)
    if api == "completions":
        return PATHS[api], completions_body(prompt_ids, model=model, max_tokens=max_tokens,
                                            ignore_eos=ignore_eos, stream=stream,
                                            top_logprobs=top_logprobs)
    if api == "chat":
        raise ValueError("chat needs text messages; token-exact requests use generate or "
                         "completions")
    raise ValueError(f"unknown api {api!r}; one of {', '.join(TOKEN_APIS)}")
