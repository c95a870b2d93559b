"""One builder per endpoint shape; the older entry points are these builders."""

from __future__ import annotations

import pytest

from pytest_rocm_llm.client.chat import ChatSampler
from pytest_rocm_llm.client.completions import request_body
from pytest_rocm_llm.client.request_bodies import (
    chat_body,
    completions_body,
    generate_body,
    token_request,
)
from pytest_rocm_llm.client.streaming import build_payload


def test_generate_body() -> None:
    assert generate_body(text="hi", max_new_tokens=4, sampling={"top_p": 0.5}) == {
        "text": "hi", "sampling_params": {"max_new_tokens": 4, "temperature": 0.0,
                                          "ignore_eos": False, "top_p": 0.5},
        "stream": False}
    with_logprobs = generate_body([1], max_new_tokens=4, top_logprobs=0)
    assert (with_logprobs["return_logprob"], with_logprobs["top_logprobs_num"],
            with_logprobs["logprob_start_len"]) == (True, 0, -1)
    with pytest.raises(ValueError, match="exactly one"):
        generate_body([1], text="hi", max_new_tokens=4)


def test_completions_body_asks_for_ids_and_the_usage_chunk() -> None:
    plain = completions_body([1, 2], model="m", max_tokens=3)
    assert "logprobs" not in plain and "stream_options" not in plain
    streamed = completions_body([1, 2], model="m", max_tokens=3, stream=True, top_logprobs=2)
    assert streamed["stream_options"] == {"include_usage": True}
    assert streamed["return_tokens_as_token_ids"] and streamed["return_token_ids"]


def test_chat_body_sends_both_length_fields() -> None:
    body = chat_body([{"role": "user", "content": "q"}], model="m", max_tokens=9, seed=3,
                     stop=["A:"])
    assert body["max_completion_tokens"] == body["max_tokens"] == 9
    assert (body["seed"], body["stop"], body["stream"]) == (3, ["A:"], False)
    assert ChatSampler("http://x", "m", 9, seed=3, stop=["A:"]).payload(
        [{"role": "user", "content": "q"}]) == body


def test_the_token_apis_share_one_dispatcher() -> None:
    for api in ("generate", "completions"):
        assert build_payload(api, [1, 2], 7, "m") == token_request(
            api, [1, 2], 7, model="m", stream=True, ignore_eos=True)
        assert build_payload(api, [1, 2], 7, "m", extra={"rid": "r1"})[1]["rid"] == "r1"
        assert request_body(api, [1, 2], 7, 3, model="m")[1] == token_request(
            api, [1, 2], 7, model="m", top_logprobs=3)[1]
    with pytest.raises(ValueError, match="chat needs text messages"):
        token_request("chat", [1], 1)
    with pytest.raises(ValueError, match="unknown api 'x'"):
        token_request("x", [1], 1)
