"""Smoke checks that a serving build loads, answers deterministically, reuses its prefix
cache and reports what it is. Each check first shows its preconditions (non-empty output,
prompt long enough to matter) so that it cannot pass against an empty server."""

from __future__ import annotations

import re

from pytest_rocm_llm import LLMClient, LLMServer

PROMPT = "Write one sentence about the ocean."


def test_greedy_completion_is_deterministic(llm_client: LLMClient) -> None:
    first = llm_client.generate(PROMPT, max_new_tokens=24, temperature=0.0)
    second = llm_client.generate(PROMPT, max_new_tokens=24, temperature=0.0)
    assert first.completion_tokens > 0 and first.output_ids, "server returned no tokens"
    assert len(first.output_ids) == first.completion_tokens
    assert first.output_ids == second.output_ids, (
        f"greedy decoding changed between identical requests:\n"
        f"  first : {first.text!r}\n  second: {second.text!r}")


def test_repeated_long_prompt_is_served_from_prefix_cache(llm_client: LLMClient) -> None:
    # ~800 tokens of varied text: long enough that a cache miss is unmistakable, short
    # enough to prefill in seconds on the CPU reference.
    words = " ".join(f"item{i} is {i * 7 % 13} units;" for i in range(90))
    prompt = f"Inventory report. {words} Summarise the inventory."
    llm_client.flush_cache()
    cold = llm_client.generate(prompt, max_new_tokens=4)
    warm = llm_client.generate(prompt, max_new_tokens=4)
    assert cold.prompt_tokens >= 512, f"prompt too short to test caching: {cold.prompt_tokens}"
    assert cold.cached_tokens is not None, (
        "server did not report cached_tokens; launch sglang with --enable-cache-report")
    assert cold.cached_tokens < 0.1 * cold.prompt_tokens, (
        f"cache was not cold after /flush_cache: {cold.cached_tokens}/{cold.prompt_tokens}")
    assert warm.prompt_tokens == cold.prompt_tokens
    ratio = warm.cached_tokens / warm.prompt_tokens
    assert ratio >= 0.95, (
        f"repeated prompt served with {warm.cached_tokens}/{warm.prompt_tokens} cached tokens "
        f"({ratio:.0%}); the radix prefix cache is not reusing the prompt")


def test_reports_its_model_and_version(llm_server: LLMServer, llm_client: LLMClient) -> None:
    info = llm_client.server_info()
    model = llm_client.model_info()
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", str(info.get("version"))), info.get("version")
    if llm_server.process is not None:
        # The version the flag check found in the engine environment is the one serving.
        assert info["version"] == llm_server.engine_version
        assert model["model_path"] == llm_server.model_path
    assert model["served_model_name"] == llm_server.served_model_name
    assert model["is_generation"] is True
