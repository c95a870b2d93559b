"""The runner's bookkeeping, with stand-in samplers: a failed request is not a wrong
answer, strict and flexible are both reported, progress is visible. The samplers here stand
in for a server only to produce failures and exact outputs on demand; the real server runs
in test_evals_engine.py. The chat sampler's own failure path is exercised on a port where
nothing listens."""

from __future__ import annotations

import asyncio
import math

from pytest_rocm_llm.client.chat import ChatAnswer, ChatSampler
from pytest_rocm_llm.correctness.accuracy import arithmetic
from pytest_rocm_llm.correctness.accuracy.runner import run_accuracy, run_accuracy_sync
from pytest_rocm_llm.serving.ports import claim_port, release_port


def test_failed_requests_are_counted_apart_and_block_judgement() -> None:
    items = arithmetic.build(count=20, shots=0, seed=0)
    gold = {i.messages[-1]["content"]: i.gold for i in items}
    calls = 0

    async def sampler(messages):
        nonlocal calls
        calls += 1
        answer = gold[messages[-1]["content"]]
        index = calls
        await asyncio.sleep(0)
        if index <= 2:
            return ChatAnswer("", None, None, "HTTP 503: overloaded")
        if index <= 10:  # right, in the strict format
            return ChatAnswer(f"so\n#### {answer}", "stop", 5)
        if index <= 15:  # right, but only in prose
            return ChatAnswer(f"The total is {answer}.", "stop", 5)
        if index <= 17:
            return ChatAnswer("I do not know", "length", 64)
        return ChatAnswer(f"It is {int(answer) + 1}", "stop", 5)

    lines: list[str] = []
    result = asyncio.run(run_accuracy(items, sampler, 4, lines.append, "arith", "arithmetic"))
    m = result.metrics
    assert (m["items"], m["n"], m["failed_requests"]) == (20, 18, 2)
    assert (m["correct"], m["accuracy"]) == (13, 13 / 18)
    assert (m["accuracy_strict"], m["accuracy_flexible"]) == (8 / 18, 13 / 18)
    assert m["invalid_rate"] == 2 / 18 and m["truncated_rate"] == 2 / 18
    assert m["stderr"] == math.sqrt((13 / 18) * (5 / 18) / 18)
    assert len(result.problems) == 1 and "2 of 20 requests failed" in result.problems[0]
    assert "HTTP 503: overloaded" in result.problems[0]
    failed = [r for r in result.records if r.get("error")]
    assert len(failed) == 2 and all(r["correct"] is None for r in failed)
    assert lines[0].startswith("[rocm-llm] eval arith (arithmetic): 20 items")
    assert sum("items (" in ln for ln in lines) == 10  # every 10%
    assert "20/20 items (100%)" in lines[-1]


def test_strict_scoring_and_an_empty_eval() -> None:
    items = arithmetic.build(count=4, shots=0, seed=0)

    async def prose(messages):
        return ChatAnswer("The answer is 3.", "stop", 5)

    strict = asyncio.run(run_accuracy(items, prose, 2, lambda _: None, "a", "arithmetic",
                                      scoring="strict"))
    assert strict.metrics["invalid_rate"] == 1.0 and strict.problems == ()
    empty = asyncio.run(run_accuracy([], prose, 2, lambda _: None, "e", "arithmetic"))
    assert empty.metrics["n"] == 0 and math.isnan(empty.metrics["accuracy"])
    assert empty.problems == ("no item was scored (the eval has no items)",)


def test_a_dead_endpoint_gives_failed_samples_not_exceptions() -> None:
    port = claim_port()  # claimed and never listened on
    try:
        sampler = ChatSampler(f"http://127.0.0.1:{port}", "m", max_tokens=8,
                              headers={"Authorization": "Bearer s3cret"})
        result = run_accuracy_sync(arithmetic.build(count=3, shots=0, seed=0), sampler, 2,
                                   lambda _: None, "dead", "arithmetic")
    finally:
        release_port(port)
    assert result.metrics["failed_requests"] == 3 and result.metrics["n"] == 0
    assert "ConnectError" in result.problems[0]
    assert "s3cret" not in repr(sampler) + repr(result)


def test_payload_carries_sglang_and_openai_fields() -> None:
    body = ChatSampler("http://h:1/", "m", 64, temperature=0.0, seed=3,
                       stop=["Question:"]).payload([{"role": "user", "content": "hi"}])
    assert body["max_completion_tokens"] == body["max_tokens"] == 64
    assert (body["seed"], body["stop"], body["stream"]) == (3, ["Question:"], False)
