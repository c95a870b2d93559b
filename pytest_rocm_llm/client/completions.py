"""Greedy generation from token ids with per-position logprobs, for any engine.

Two APIs, picked by a string so that parity and long-context code never care which engine
answers:

- ``generate``: sglang's native ``POST /generate`` (fields read from sglang 0.5.23's
  tokenizer_manager): ``input_ids``, ``sampling_params`` {temperature, max_new_tokens},
  ``return_logprob``, ``top_logprobs_num``, ``logprob_start_len``. ``meta_info`` carries
  ``output_token_logprobs`` as ``[logprob, token_id, text|None]`` triples,
  ``output_top_logprobs`` as one list of such triples (or None) per position,
  prompt_tokens, completion_tokens, finish_reason {type,...}, and ``spec_verify_ct`` only
  when the server speculates.
- ``completions``: OpenAI ``POST /v1/completions`` as vLLM serves it: ``prompt`` as a list
  of ids, ``logprobs=k``, ``return_tokens_as_token_ids`` (tokens come back as
  ``"token_id:<id>"``), ``return_token_ids`` (``choices[0].token_ids``, vLLM >= 0.10.2);
  ``choices[0].logprobs`` has ``tokens``, ``token_logprobs`` and ``top_logprobs`` (one
  ``{token: logprob}`` dict per position), and ``usage.completion_tokens``.

A request that fails (transport error, non-200, malformed body) is a ``GreedyGeneration``
with ``error`` set, never an exception: evaluations report failed requests as a problem.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from pytest_rocm_llm.client.request_bodies import TOKEN_APIS, token_request
from pytest_rocm_llm.excerpt import clip
from pytest_rocm_llm.http import async_client
from pytest_rocm_llm.serving.speculation import verify_steps

APIS = TOKEN_APIS


@dataclass(frozen=True)
class Endpoint:
    """Where to send requests and how. ``model`` is the served name (OpenAI APIs need it)."""

    base_url: str
    api: str = "generate"
    model: str = ""
    # may hold an API key: kept out of the repr, which tracebacks and reports print
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.api not in APIS:
            raise ValueError(f"unknown api {self.api!r}; one of {', '.join(APIS)}")


@dataclass(frozen=True)
class GreedyGeneration:
    """A greedy output as token ids, with each position's logprobs: what parity, long
    context, stream consistency and speculation read."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float | None, ...]  # the chosen token's logprob per position
    top_logprobs: tuple[dict[int, float], ...]  # top-k {id: logprob} per position
    finish_reason: str | None
    completion_tokens: int
    spec_verify_ct: int | None
    error: str | None = None
    prompt_tokens: int | None = None
    text: str = ""
    latency_s: float | None = None
    spec_conflict: str | None = None  # meta_info's speculation fields disagree (why)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def accept_length(self) -> float | None:
        """Tokens per verify step (sglang's definition, bonus token included)."""
        if not self.spec_verify_ct:
            return None
        return self.completion_tokens / self.spec_verify_ct


def failed(error: str, latency_s: float | None = None) -> GreedyGeneration:
    return GreedyGeneration((), (), (), None, 0, None, error=clip(error, 500), latency_s=latency_s)


def request_body(api: str, prompt_ids: Sequence[int], max_tokens: int, top_logprobs: int = 0,
                 model: str = "", stream: bool = False,
                 ignore_eos: bool = False) -> tuple[str, dict[str, Any]]:
    """Path and JSON body of a greedy request for ``prompt_ids``, with the chosen token's
    logprob and ``top_logprobs`` more per position."""
    if api not in APIS:
        raise ValueError(f"unknown api {api!r}; one of {', '.join(APIS)}")
    return token_request(api, [int(i) for i in prompt_ids], max_tokens, model=model,
                         stream=stream, ignore_eos=ignore_eos, top_logprobs=top_logprobs)


def _triples(entries: Any) -> dict[int, float]:
    out: dict[int, float] = {}
    for e in entries or ():
        if e is not None and e[0] is not None:
            out[int(e[1])] = float(e[0])
    return out


def parse_generate(data: Mapping[str, Any]) -> GreedyGeneration:
    """One /generate response (or the last event of its stream) as a GreedyGeneration."""
    meta = data.get("meta_info") or {}
    ids = tuple(int(i) for i in data.get("output_ids") or ())
    chosen = meta.get("output_token_logprobs") or []
    if chosen and len(chosen) == len(ids):
        lps = tuple(None if e[0] is None else float(e[0]) for e in chosen)
    else:
        lps = tuple(None for _ in ids)
    tops = tuple(_triples(pos) for pos in (meta.get("output_top_logprobs") or ()))
    finish = meta.get("finish_reason")
    completion = int(meta.get("completion_tokens", len(ids)))
    verify, conflict = verify_steps(meta, completion)  # whichever 0.5.x names are present
    return GreedyGeneration(
        token_ids=ids, logprobs=lps, top_logprobs=tops,
        finish_reason=str(finish.get("type")) if isinstance(finish, dict) else finish,
        completion_tokens=completion,
        spec_verify_ct=verify, spec_conflict=conflict,
        prompt_tokens=None if meta.get("prompt_tokens") is None else int(meta["prompt_tokens"]),
        text=data.get("text") or "",
    )


def token_id(token: str) -> int:
    """``"token_id:123"`` (vLLM's return_tokens_as_token_ids) -> 123."""
    if not token.startswith("token_id:"):
        raise ValueError(f"token {token!r} is not an id: the server ignored "
                         "return_tokens_as_token_ids (not vLLM, or too old)")
    return int(token[len("token_id:"):])


def parse_completions(data: Mapping[str, Any]) -> GreedyGeneration:
    """One /v1/completions response (non-streamed) as a GreedyGeneration."""
    choice = (data.get("choices") or [None])[0]
    if not isinstance(choice, Mapping):
        raise TypeError("response has no choices")
    lp = choice.get("logprobs") or {}
    tokens = lp.get("tokens") or []
    ids = tuple(int(i) for i in choice.get("token_ids") or ()) or tuple(
        token_id(t) for t in tokens)
    lps = tuple(None if v is None else float(v) for v in lp.get("token_logprobs") or ())
    if len(lps) != len(ids):
        lps = tuple(None for _ in ids)
    tops = tuple({token_id(t): float(v) for t, v in (pos or {}).items()}
                 for pos in lp.get("top_logprobs") or ())
    usage = data.get("usage") or {}
    return GreedyGeneration(
        token_ids=ids, logprobs=lps, top_logprobs=tops,
        finish_reason=choice.get("finish_reason"),
        completion_tokens=int(usage.get("completion_tokens") or len(ids)),
        spec_verify_ct=None,  # vLLM reports acceptance only as server metrics
        prompt_tokens=None if usage.get("prompt_tokens") is None else int(usage["prompt_tokens"]),
        text=choice.get("text") or "",
    )


PARSERS: dict[str, Callable[[Mapping[str, Any]], GreedyGeneration]] = {
    "generate": parse_generate, "completions": parse_completions}


async def generate(client: httpx.AsyncClient, endpoint: Endpoint, prompt_ids: Sequence[int],
                   max_tokens: int, top_logprobs: int = 0,
                   ignore_eos: bool = False) -> GreedyGeneration:
    """One greedy request; ``client`` must have ``endpoint.base_url`` as its base."""
    path, body = request_body(endpoint.api, prompt_ids, max_tokens, top_logprobs,
                              endpoint.model, ignore_eos=ignore_eos)
    start = time.perf_counter()
    try:
        r = await client.post(path, json=body)
    except httpx.HTTPError as exc:
        return failed(f"{type(exc).__name__}: {exc}", time.perf_counter() - start)
    latency = time.perf_counter() - start
    if r.status_code != 200:
        return failed(f"HTTP {r.status_code}: {clip(r.text)}", latency)
    try:
        gen = PARSERS[endpoint.api](r.json())
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        return failed(f"malformed response: {type(exc).__name__}: {exc}", latency)
    if not gen.token_ids:
        return failed("the response carried no output tokens", latency)
    return dataclasses.replace(gen, latency_s=latency)


def client_for(endpoint: Endpoint) -> httpx.AsyncClient:
    return async_client(endpoint.base_url, timeout_s=endpoint.timeout_s,
                        headers=endpoint.headers)


async def generate_all(endpoint: Endpoint, prompts: Sequence[Sequence[int]], max_tokens: int,
                       top_logprobs: int = 0, concurrency: int = 1,
                       progress: Callable[[str], None] | None = None,
                       label: str = "") -> list[GreedyGeneration]:
    """Greedy generations for every prompt, in order; ``concurrency`` requests in flight."""
    results: list[GreedyGeneration | None] = [None] * len(prompts)
    sem = asyncio.Semaphore(max(1, concurrency))
    done = 0
    step = max(1, len(prompts) // 10)

    async with client_for(endpoint) as client:
        async def one(i: int) -> None:
            nonlocal done
            async with sem:
                results[i] = await generate(client, endpoint, prompts[i], max_tokens,
                                            top_logprobs)
            done += 1
            if progress is not None and (done % step == 0 or done == len(prompts)):
                progress(f"[rocm-llm] {label}: {done}/{len(prompts)} requests")

        await asyncio.gather(*(one(i) for i in range(len(prompts))))
    return [r for r in results if r is not None]


def generate_sync(endpoint: Endpoint, prompts: Sequence[Sequence[int]], max_tokens: int,
                  top_logprobs: int = 0, concurrency: int = 1,
                  progress: Callable[[str], None] | None = None,
                  label: str = "") -> list[GreedyGeneration]:
    """``generate_all`` for synchronous callers (tests, the plugin's fixtures)."""
    return asyncio.run(generate_all(endpoint, prompts, max_tokens, top_logprobs, concurrency,
                                    progress, label))
