"""A small synchronous client for sglang's native ``/generate`` endpoint.

A transport error on a server whose process has exited becomes ``ServerDied`` (with the log
tail): the test then reports an infrastructure failure, not a wrong answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from pytest_rocm_llm.client.request_bodies import PATHS, generate_body
from pytest_rocm_llm.errors import InfrastructureError
from pytest_rocm_llm.excerpt import clip
from pytest_rocm_llm.http import sync_client
from pytest_rocm_llm.serving.server import LLMServer


class CacheNotFlushed(InfrastructureError):
    """The server did not empty its prefix cache when asked."""


@dataclass(frozen=True)
class GenerateResponse:
    """One answer of sglang's ``/generate``: text, ids and the server's own figures."""

    text: str
    output_ids: tuple[int, ...]
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    finish_reason: str | None
    e2e_latency_s: float | None
    raw: dict[str, Any]


class LLMClient:
    def __init__(self, server: LLMServer, timeout_s: float = 600.0,
                 headers: dict[str, str] | None = None) -> None:
        self.server = server
        self._http = sync_client(server.base_url, timeout_s=timeout_s, headers=headers)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            r = self._http.post(path, json=payload)
        except httpx.TransportError:
            self.server.check_alive()  # raises ServerDied with the log tail if it exited
            raise
        r.raise_for_status()
        return r.json()

    def generate(
        self,
        prompt: str | None = None,
        *,
        input_ids: list[int] | None = None,
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        ignore_eos: bool = False,
        **sampling: Any,
    ) -> GenerateResponse:
        if (prompt is None) == (input_ids is None):
            raise ValueError("pass exactly one of prompt or input_ids")
        payload = generate_body(input_ids, text=prompt, max_new_tokens=max_new_tokens,
                                temperature=temperature, ignore_eos=ignore_eos,
                                sampling=sampling)
        data = self._post(PATHS["generate"], payload)
        meta = data.get("meta_info", {})
        finish = meta.get("finish_reason")
        return GenerateResponse(
            text=data.get("text", ""),
            output_ids=tuple(data.get("output_ids") or ()),
            prompt_tokens=int(meta.get("prompt_tokens", 0)),
            completion_tokens=int(meta.get("completion_tokens", 0)),
            cached_tokens=meta.get("cached_tokens"),
            finish_reason=finish.get("type") if isinstance(finish, dict) else finish,
            e2e_latency_s=meta.get("e2e_latency"),
            raw=data,
        )

    def flush_cache(self, timeout_s: float = 60.0) -> None:
        """Empty the radix (prefix) cache. sglang 0.5.23 refuses while any request runs or
        waits (HTTP 400, its reason in the body) unless ``timeout`` lets it wait for idle
        (scheduler_components/flush_wrapper.py); builds without the parameter ignore it. A
        refused flush raises: a test that needs a cold cache must not go on with a warm one."""
        r = self._http.post("/flush_cache", params={"timeout": timeout_s})
        if r.status_code != 200:
            raise CacheNotFlushed(f"{self.server.name}: /flush_cache refused (HTTP "
                                  f"{r.status_code}): {clip(r.text.strip())}")

    def _get(self, path: str, old_path: str) -> dict[str, Any]:
        """GET ``path``, or ``old_path`` on builds from before sglang renamed it."""
        r = self._http.get(path)
        if r.status_code == 404:
            r = self._http.get(old_path)
        r.raise_for_status()
        return r.json()

    def server_info(self) -> dict[str, Any]:
        return self._get("/server_info", "/get_server_info")

    def model_info(self) -> dict[str, Any]:
        return self._get("/model_info", "/get_model_info")
