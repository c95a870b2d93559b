"""A reasoning model's answers, scored as a reasoning model's: the chat sampler sends the
eval's ``chat_template_kwargs``; the scored answer is the final content, with the thinking
(``reasoning_content``, or inline ``<think>``) kept apart, so a trace cut at max_tokens
scores as no answer, never as its last number; ``tool_calls`` are kept.

The responses are recorded bodies in sglang 0.5.23's ``ChatCompletionResponse`` shape
(``entrypoints/openai/protocol.py``: ``ChatMessage.reasoning_content`` with
``--reasoning-parser``, ``UsageInfo.reasoning_tokens``), served through httpx's mock
transport to the production sampler and runner: no server here can think (the CPU
reference model has no reasoning mode), so the same path is proven on GLM-style outputs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from pytest_rocm_llm.client.chat import ChatSampler, final_content
from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.correctness.accuracy.gsm8k import Problem, items_from
from pytest_rocm_llm.correctness.accuracy.runner import run_accuracy

TEST = [Problem(i, f"question {i}", f"work\n#### {10 + i}") for i in range(4)]


def sglang_body(content: str | None, reasoning: str | None, finish: str,
                tool_calls: list | None = None) -> dict:
    message: dict = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {"id": "a1b2", "object": "chat.completion", "created": 1764633600,
            "model": "glm-5.2-mxfp4",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": finish, "matched_stop": 154827}],
            "usage": {"prompt_tokens": 812, "total_tokens": 1836, "completion_tokens": 1024,
                      "prompt_tokens_details": None, "reasoning_tokens": 990},
            "metadata": {"weight_version": "default"}}


# question i -> what the server answered
RECORDED = {
    # parsed: the answer in content, a wrong number last in the thinking
    "question 0": sglang_body("The answer is 10.\n#### 10", "10 apples... or 99", "stop"),
    # cut at max_tokens while thinking: the parser puts it all in reasoning_content
    "question 1": sglang_body(None, "11 so far, then 7 more makes 18, and", "length"),
    # no reasoning parser on the server: the thinking is inline, closed, then the answer
    "question 2": sglang_body("first 5, then 77</think>\n#### 12", None, "stop"),
    # no parser and cut while thinking: an opened <think> never closed
    "question 3": sglang_body("<think>3 then 13", None, "length"),
}


def serve(seen: list[dict]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        return httpx.Response(200, json=RECORDED[body["messages"][-1]["content"]])
    return httpx.MockTransport(answer)


def test_scored_answer_is_the_final_content_and_thinking_stays_apart() -> None:
    items = [i for i in items_from(TEST, [], limit=None, shots=0, seed=0)]
    for item in items:  # the recorded answers are keyed on the bare question
        item.messages[-1]["content"] = item.messages[-1]["content"].rsplit("\n\n", 1)[-1]
    seen: list[dict] = []
    sampler = ChatSampler("http://glm", "glm-5.2-mxfp4", 1024,
                          chat_template_kwargs={"enable_thinking": True})

    async def go():
        sampler._http()._transport = serve(seen)  # type: ignore[attr-defined]
        try:
            return await run_accuracy(items, sampler, 2, lambda _: None, "gsm8k", "gsm8k")
        finally:
            await sampler.aclose()

    result = asyncio.run(go())
    assert all(b["chat_template_kwargs"] == {"enable_thinking": True} for b in seen)
    by = {r["id"]: r for r in result.records}
    assert by["test-0"]["extracted"] == "10" and by["test-0"]["correct"]
    assert by["test-2"]["extracted"] == "12" and by["test-2"]["correct"]
    # cut while thinking: no answer (a flexible scorer on the whole trace would say 18 / 13)
    assert by["test-1"]["extracted"] is None and by["test-3"]["extracted"] is None
    assert by["test-1"]["reasoning_chars"] > 0 and by["test-0"]["reasoning_chars"] > 0
    m = result.metrics
    assert (m["accuracy"], m["invalid_rate"], m["cut_in_reasoning_rate"]) == (0.5, 0.5, 0.5)
    assert "2 of them while still reasoning: raise max_tokens" in result.details[0]


def test_tool_calls_and_no_kwargs_when_none_declared() -> None:
    call = [{"id": "call_0", "index": 0, "type": "function",
             "function": {"name": "get_reservation", "arguments": '{"id": "X1"}'}}]
    seen: list[dict] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=sglang_body(None, "look it up", "tool_calls", call))

    sampler = ChatSampler("http://glm", "m", 64)

    async def go():
        sampler._http()._transport = httpx.MockTransport(answer)  # type: ignore[attr-defined]
        try:
            return await sampler([{"role": "user", "content": "my booking"}])
        finally:
            await sampler.aclose()

    a = asyncio.run(go())
    assert "chat_template_kwargs" not in seen[0]
    assert a.ok and a.text == "" and a.reasoning == "look it up"
    assert a.tool_calls[0]["function"]["name"] == "get_reservation"


@pytest.mark.parametrize("content, answer, thought", [
    ("plain", "plain", ""),
    ("a</think>b", "b", "a"),
    ("<think>a</think> b", "b", "a"),
    ("<think>a", "", "a"),
])
def test_final_content(content: str, answer: str, thought: str) -> None:
    assert final_content(content) == (answer, thought)


def test_an_eval_declares_its_template_kwargs(tmp_path: Path) -> None:
    data = {"suite": {"name": "r", "targets": ["mi355x"]}, "model": {"id": "org/m"},
            "profiles": {"default": {}},
            "evals": {"g": {"kind": "gsm8k", "chat_template_kwargs": {"enable_thinking": True,
                                                                      "reasoning_effort": 2}}},
            "targets": {"mi355x": {"evals": {"g": {"max_tokens": 9}}}}}
    suite = parse_suite(tmp_path / "suite.toml", data)
    e = suite.eval_for("g", TARGETS["mi355x"])
    assert dict(e.chat_template_kwargs) == {"enable_thinking": True, "reasoning_effort": 2}
    assert e.max_tokens == 9  # an override keeps the kwargs
