"""Response parsing of the two generation APIs, on bodies shaped as the engines' sources
build them (sglang 0.5.23 tokenizer_manager; vLLM's completion serving with
return_tokens_as_token_ids). The real sglang path is covered by test_engine_correctness."""

from __future__ import annotations

import pytest

from pytest_rocm_llm.client.completions import (
    Endpoint,
    parse_completions,
    parse_generate,
    request_body,
    token_id,
)

SGLANG = {
    "text": " Paris.",
    "output_ids": [7042, 30],
    "meta_info": {
        "prompt_tokens": 5, "completion_tokens": 2, "spec_verify_ct": 1,
        "finish_reason": {"type": "length", "length": 2},
        "output_token_logprobs": [[-0.1, 7042, None], [-0.5, 30, None]],
        "output_top_logprobs": [[[-0.1, 7042, None], [-2.5, 253, None]],
                                [[-0.5, 30, None], [-1.0, 28, None]]],
    },
}

VLLM = {
    "choices": [{
        "text": " Paris.", "finish_reason": "stop",
        "logprobs": {"tokens": ["token_id:7042", "token_id:30"],
                     "token_logprobs": [-0.1, -0.5],
                     "top_logprobs": [{"token_id:7042": -0.1, "token_id:253": -2.5},
                                      {"token_id:30": -0.5, "token_id:28": -1.0}]},
    }],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2},
}


@pytest.mark.parametrize("parse, data", [(parse_generate, SGLANG),
                                         (parse_completions, VLLM)])
def test_both_apis_give_the_same_generation(parse, data) -> None:
    g = parse(data)
    assert g.token_ids == (7042, 30) and g.logprobs == (-0.1, -0.5)
    assert g.top_logprobs == ({7042: -0.1, 253: -2.5}, {30: -0.5, 28: -1.0})
    assert g.completion_tokens == 2 and g.prompt_tokens == 5 and g.text == " Paris."


def test_sglang_speculation_fields() -> None:
    g = parse_generate(SGLANG)
    assert g.spec_verify_ct == 1 and g.accept_length == 2.0 and g.finish_reason == "length"
    plain = parse_generate({**SGLANG, "meta_info": {
        k: v for k, v in SGLANG["meta_info"].items() if k != "spec_verify_ct"}})
    assert plain.spec_verify_ct is None and plain.accept_length is None


def test_vllm_token_ids_field_wins_and_text_tokens_are_refused() -> None:
    choice = {**VLLM["choices"][0], "token_ids": [7042, 30]}
    assert parse_completions({**VLLM, "choices": [choice]}).token_ids == (7042, 30)
    with pytest.raises(ValueError, match="return_tokens_as_token_ids"):
        token_id(" Paris")


def test_request_bodies() -> None:
    path, body = request_body("generate", [1, 2], 8, 5)
    assert path == "/generate" and body["input_ids"] == [1, 2] and body["top_logprobs_num"] == 5
    assert body["sampling_params"]["temperature"] == 0.0 and body["return_logprob"] is True
    path, body = request_body("completions", [1, 2], 8, 5, model="m", stream=True)
    assert path == "/v1/completions" and body["prompt"] == [1, 2] and body["logprobs"] == 5
    assert body["return_tokens_as_token_ids"] is True and body["stream_options"]
    with pytest.raises(ValueError, match="unknown api 'chat'"):
        Endpoint("http://127.0.0.1:1", api="chat")
