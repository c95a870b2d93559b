"""The accuracy evals end to end against the real CPU sglang (SmolLM2-135M-Instruct):
6 GSM8K and 10 arithmetic items through the chat sampler and the runner. The result must be
well-formed (every request answered, items scored, rates are numbers); the tiny model's
score is not asserted here (suites set CPU floors from measured runs). Served by the session's
shared reference server (tests/conftest.py cpu_server): what is proven is the evals' path
over real sglang chat responses, which needs a live server, not one of its own."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from pytest_rocm_llm.client.chat import ChatAnswer, ChatSampler
from pytest_rocm_llm.correctness.accuracy import arithmetic, gsm8k
from pytest_rocm_llm.correctness.accuracy.runner import run_accuracy_sync

pytestmark = pytest.mark.engine

DATA_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
SERVED = "smollm2-135m-instruct"


def test_gsm8k_and_arithmetic_results_are_well_formed(cpu_server: str) -> None:
    if not (DATA_DIR / "gsm8k" / "test.jsonl").is_file():
        pytest.skip(f"GSM8K data not at {DATA_DIR}")
    lines: list[str] = []
    runs = {
        "gsm8k": gsm8k.build(DATA_DIR, limit=6, shots=0, seed=0),
        "arithmetic": arithmetic.build(count=10, shots=0, seed=0),
    }
    for kind, items in runs.items():
        sampler = ChatSampler(cpu_server, SERVED, max_tokens=64, seed=0, timeout_s=1800)
        result = run_accuracy_sync(items, sampler, concurrency=10, progress=lines.append,
                                   name=kind, kind=kind)
        m = result.metrics
        assert result.problems == (), result.problems
        assert m["failed_requests"] == 0 and m["n"] == len(items) == len(result.records)
        assert 0.0 <= m["invalid_rate"] <= 1.0 and 0.0 <= m["accuracy"] <= 1.0
        assert m["correct"] == sum(r["correct"] for r in result.records)
        assert not math.isnan(m["stderr"])
        # every answer came back with a finish reason and some generated text
        assert all(r["finish_reason"] in ("stop", "length") for r in result.records)
        assert all(r["response"] for r in result.records)
    assert any("6/6 items (100%)" in line for line in lines), lines


def test_a_rejected_request_is_a_failed_sample(cpu_server: str) -> None:
    # A message role sglang's request model does not accept: the real server answers 4xx.
    async def ask() -> ChatAnswer:
        async with ChatSampler(cpu_server, SERVED, max_tokens=4) as sampler:
            return await sampler([{"role": "narrator", "content": "hi"}])

    sample = asyncio.run(ask())
    assert not sample.ok and sample.error.startswith("HTTP 4"), sample
