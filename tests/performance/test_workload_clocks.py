"""Workload clocks (issue 23 items 4, 5): the single-stream run's wall time starts after its
warm-up, and an OpenAI-style stream whose chunks carry several tokens (speculative decoding)
spreads the tokens the final usage reports over its chunks instead of stamping them all at
the first."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from pytest_rocm_llm.client.records import RequestRecord
from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.performance import workloads
from pytest_rocm_llm.performance.metrics import token_times
from pytest_rocm_llm.performance.prompts import Vocabulary


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


def test_the_single_stream_clock_starts_after_the_warm_up(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    clock = FakeClock()
    monkeypatch.setattr(workloads.time, "perf_counter", clock.perf_counter)

    async def one(client, w, model, prompt, index, t0):  # each request takes 2 s, 100 tokens
        start = clock.now
        clock.now += 2.0
        return RequestRecord(index=index, send_s=start - t0, expected_output_tokens=100,
                             expected_prompt_tokens=8, ok=True, ttft_s=0.1, e2e_s=2.0,
                             prompt_tokens=8, completion_tokens=100)

    monkeypatch.setattr(workloads, "_one", one)
    w = Workload(name="decode", kind="single_stream", input_tokens=8, output_tokens=100,
                 requests=10, warmup=1, seed=1, profile=None, api="generate")
    vocab = Vocabulary(np.arange(10, 50), Path("tokenizer.json"))
    r = asyncio.run(workloads.run_single_stream("http://127.0.0.1:9", "m", vocab, w,
                                                lambda _: None))
    assert r.metrics["duration_s"] == pytest.approx(20.0)  # 10 measured requests, not 11
    assert r.metrics["output_tok_s"] == pytest.approx(50.0)  # read 45.5 (9% low) before
    assert r.metrics["request_throughput"] == pytest.approx(0.5)
    assert r.records[0].send_s == pytest.approx(0.0)


def openai_record(completion_tokens: int, gaps: list[float]) -> RequestRecord:
    return RequestRecord(index=0, send_s=0.0, expected_output_tokens=completion_tokens,
                         expected_prompt_tokens=8, ok=True, ttft_s=1.0,
                         e2e_s=1.0 + sum(gaps), completion_tokens=completion_tokens,
                         chunk_gaps=[(g, 1) for g in gaps], content_chunks=len(gaps) + 1)


def test_an_openai_stream_spreads_usage_tokens_over_its_later_chunks() -> None:
    # 3 chunks, 7 tokens by usage: 1 at the first chunk (prefill), 3 in each verify step
    times, counts = token_times(openai_record(7, [0.5, 0.5]))
    assert times.tolist() == pytest.approx([1.0, 1.5, 2.0])
    assert counts.tolist() == pytest.approx([1, 3, 3])
