"""run_long_context against a stand-in server over real HTTP: exact scoring on the
production path (a stand-in that lists every number of the prompt scores nothing), and a
length the server cannot hold is a named error before the first request."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pytest_rocm_llm.client.completions import Endpoint
from pytest_rocm_llm.correctness.context_fit import check_served
from pytest_rocm_llm.correctness.long_context import (
    LongContextConfig,
    _Encoder,
    build_items,
    run_long_context,
)
from pytest_rocm_llm.serving.launch import ConfigProblem
from tests.toy_engine import JsonHandler, serving

Answer = Callable[[list[int]], str]


@contextmanager
def standin(enc: _Encoder, answer: Answer, max_model_len: int | None,
            seen: list[int]) -> Iterator[str]:
    """sglang's /generate answering ``answer(prompt ids)``, and /v1/models reporting
    ``max_model_len`` (404 when None); ``seen`` collects each request's prompt length."""

    class Handler(JsonHandler):

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path != "/v1/models" or max_model_len is None:
                self.send_error(404)
                return
            self.reply({"object": "list", "data": [
                {"id": "toy", "object": "model", "max_model_len": max_model_len}]})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            ids = body["input_ids"]
            seen.append(len(ids))
            out = enc(answer(ids))[: body["sampling_params"]["max_new_tokens"]]
            self.reply({"text": "", "output_ids": out, "meta_info": {
                "prompt_tokens": len(ids), "completion_tokens": len(out),
                "finish_reason": {"type": "length"}}})

    with serving(Handler) as url:
        yield url


@pytest.fixture(scope="module")
def tok(reference_model_dir: Path) -> str:
    return str(reference_model_dir / "tokenizer.json")


CONFIG = LongContextConfig("lc", "long_context", None, (512, 1024), samples=3, seed=4,
                           max_tokens=48)


def run(tok: str, answer: Answer, max_model_len: int | None = 8192,
        config: LongContextConfig = CONFIG, seen: list[int] | None = None):
    enc = _Encoder(tok)
    with standin(enc, answer, max_model_len, [] if seen is None else seen) as url:
        return run_long_context(config, Endpoint(url, "generate", "toy"), tok, lambda m: None)


def answers(tok: str, config: LongContextConfig = CONFIG) -> dict[tuple[int, ...], str]:
    return {it.input_ids: it.answer for it in build_items(config, tok)}


def test_the_right_answer_scores_everything(tok: str) -> None:
    key = answers(tok)
    result = run(tok, lambda ids: f" {key[tuple(ids)]}.")
    assert result.metrics["accuracy_min"] == 1.0 and not result.problems


def test_listing_every_number_of_the_prompt_scores_nothing_where_there_are_several(
        tok: str) -> None:
    enc = _Encoder(tok)
    result = run(tok, lambda ids: " " + " ".join(
        dict.fromkeys(re.findall(r"\d+", enc.decode(ids)))))
    for length in CONFIG.lengths:
        assert result.metrics[f"multikey_accuracy@{length}"] == 0.0
        assert result.metrics[f"variable_accuracy@{length}"] == 0.0
        # the pass key is the prompt's only number: listing it is answering it
        assert result.metrics[f"passkey_accuracy@{length}"] == 1.0


def test_looping_on_the_right_answer_scores_nothing(tok: str) -> None:
    key = answers(tok)
    result = run(tok, lambda ids: f" {key[tuple(ids)]}" * 8)
    assert result.metrics["accuracy_min"] == 0.0
    assert all(not r["correct"] for r in result.records)


def test_a_length_beyond_the_served_context_fails_before_any_request(tok: str) -> None:
    seen: list[int] = []
    with pytest.raises(ConfigProblem) as e:
        run(tok, lambda ids: " 1", max_model_len=1000, seen=seen)
    assert seen == []
    msg = str(e.value)
    assert "length 1024 + max_tokens 48" in msg and "context of 1000 tokens" in msg
    assert "max_model_len 1000 on GET /v1/models" in msg and "evals.lc.lengths" in msg


def test_without_a_served_limit_the_models_config_json_is_the_limit(
        tok: str, tmp_path: Path) -> None:
    shutil.copy(tok, tmp_path / "tokenizer.json")
    (tmp_path / "config.json").write_text('{"max_position_embeddings": 1024}')
    seen: list[int] = []
    with pytest.raises(ConfigProblem) as e:
        run(str(tmp_path / "tokenizer.json"), lambda ids: " 1", max_model_len=None, seen=seen)
    assert seen == []
    assert (f"max_position_embeddings = 1024 in {tmp_path / 'config.json'} is the limit"
            in str(e.value))
    # lengths that fit run as before
    fits = LongContextConfig("lc", "long_context", None, (512,), samples=1, max_tokens=16)
    result = run(str(tmp_path / "tokenizer.json"), lambda ids: " 1", max_model_len=None,
                 config=fits, seen=seen)
    assert len(seen) == 3 and result.metrics["samples"] == 3.0


def test_the_served_limit_is_exact_for_vllm_and_keeps_sglangs_headroom(
        tok: str, tmp_path: Path) -> None:
    enc = _Encoder(tok)
    with standin(enc, lambda ids: " 1", 2048, []) as url:
        # vLLM (OpenAI completions): prompt + max_tokens may fill the context exactly
        check_served("lc", (2044,), 4, Endpoint(url, "completions", "toy"), tmp_path)
        with pytest.raises(ConfigProblem, match="length 2045 \\+ max_tokens 4"):
            check_served("lc", (2045,), 4, Endpoint(url, "completions", "toy"), tmp_path)
        # sglang (/generate) refuses an input within 8 tokens of its limit
        check_served("lc", (2040,), 4, Endpoint(url, "generate", "toy"), tmp_path)
        with pytest.raises(ConfigProblem, match="length 2041"):
            check_served("lc", (2041,), 4, Endpoint(url, "generate", "toy"), tmp_path)


def test_nothing_to_judge_by_is_left_to_the_server(tok: str, tmp_path: Path) -> None:
    with standin(_Encoder(tok), lambda ids: " 1", None, []) as url:
        check_served("lc", (10**6,), 4, Endpoint(url, "generate", "toy"), tmp_path)
