"""What ``run_long_context`` reports, field by field, for a run with a right answer, a wrong
one, a degenerate one, a failed request and a prompt the server counted at another length
(a stand-in sglang /generate over real HTTP, answering per prompt)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_rocm_llm.client.completions import Endpoint
from pytest_rocm_llm.correctness.degeneration import Thresholds
from pytest_rocm_llm.correctness.long_context import (
    LongContextConfig,
    _Encoder,
    build_items,
    run_long_context,
)
from tests.correctness.test_long_context_boundaries import run as run_answering
from tests.toy_engine import JsonHandler, serving

CONFIG = LongContextConfig("lc", "long_context", None, (512, 1024), ("passkey",), samples=2,
                           seed=1, max_tokens=60)
LOOP = " the cat sat on the mat and then" * 30


def test_every_outcome_is_reported(reference_model_dir: Path) -> None:
    tok = str(reference_model_dir / "tokenizer.json")
    enc = _Encoder(tok)
    items = {tuple(it.input_ids): it for it in build_items(CONFIG, tok)}

    class Handler(JsonHandler):

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.reply({"object": "list", "data": [{"id": "toy", "max_model_len": 4096}]})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            it = items[tuple(body["input_ids"])]
            if (it.length, it.sample) == (1024, 1):
                self.reply({"error": "out of memory"}, status=400)
                return
            text = {(512, 0): f" {it.answer}.", (512, 1): " 12345.",
                    (1024, 0): f" {it.answer}." + LOOP}[(it.length, it.sample)]
            out = enc(text)[: body["sampling_params"]["max_new_tokens"]]
            counted = it.length + 1 if (it.length, it.sample) == (512, 1) else it.length
            self.reply({"text": "", "output_ids": out, "meta_info": {
                "prompt_tokens": counted, "completion_tokens": len(out),
                "finish_reason": {"type": "stop"}}})

    said: list[str] = []
    with serving(Handler) as url:
        r = run_long_context(CONFIG, Endpoint(url), tok, said.append)
    assert said[0] == "[rocm-llm] lc: 4 prompts at lengths 512, 1024"
    assert "[rocm-llm] lc: 4/4 requests" in said
    assert r.metrics == {
        "accuracy@512": 0.5, "degenerate@512": 0.0, "passkey_accuracy@512": 0.5,
        "accuracy@1024": 0.0, "degenerate@1024": 1.0, "passkey_accuracy@1024": 0.0,
        "accuracy_min": 0.0, "degenerate_outputs": 1.0, "samples": 3.0}
    assert len(r.problems) == 2
    assert r.problems[0].startswith("1 request(s) failed, e.g. passkey@1024: ")
    assert r.problems[1] == ("1 prompt(s) reached the server at another length, e.g. 512 "
                             "tokens sent, 513 reported")
    assert r.details[-2:] == ("accuracy by length: 512: 50%, 1024: 0%",
                              "accuracy falls most from 50% at 512 tokens to 0% at 1024 tokens")
    degenerate = [d for d in r.details if d.startswith("degenerate output: passkey@1024 "
                                                       "sample 0: ")]
    assert degenerate and len(degenerate) == len(r.details) - 2
    assert all("(threshold " in d and "output starts ' " in d for d in degenerate)

    right, wrong, looping, failed = r.records
    assert right == {
        "id": "passkey@512/0/0.1", "task": "passkey", "length": 512, "sample": 0, "depth": 0.1,
        "answer": right["answer"], "correct": True, "ok": True, "error": None,
        "prompt_tokens": 512, "completion_tokens": right["completion_tokens"],
        "latency_s": right["latency_s"], "degenerate": [],
        "output": f" {right['answer']}."}
    assert right["completion_tokens"] > 0 and right["latency_s"] > 0
    assert (wrong["correct"], wrong["prompt_tokens"], wrong["depth"]) == (False, 513, 0.5)
    assert looping["correct"] is False and looping["output"].startswith(
        f" {looping['answer']}. the cat")
    assert looping["completion_tokens"] == 60 and looping["degenerate"]
    assert (failed["ok"], failed["correct"], failed["output"], failed["degenerate"]) == (
        False, False, "", [])
    assert failed["error"]


@pytest.mark.parametrize("accs, worst", [((1.0, 0.5, 0.75), "from 100% at 512 tokens to 50%")])
def test_the_steepest_drop_is_named(reference_model_dir: Path, accs: tuple[float, ...],
                                    worst: str) -> None:
    """Three lengths, accuracy 100% -> 50% -> 75%: the fall is named with both lengths (the
    rise after it is not a fall)."""
    config = LongContextConfig("lc", "long_context", None, (512, 768, 1024), ("passkey",),
                               samples=4, seed=2, max_tokens=16)
    tok = str(reference_model_dir / "tokenizer.json")
    right = {512: 4, 768: 2, 1024: 3}
    r = run_answering(tok, config,
                      lambda it: f" {it.answer}." if it.sample < right[it.length] else " 1.")
    assert tuple(r.metrics[f"accuracy@{n}"] for n in (512, 768, 1024)) == accs
    assert r.metrics["accuracy_min"] == 0.5
    assert r.details[-1] == f"accuracy falls most {worst} at 768 tokens"


def test_the_suites_degeneration_thresholds_are_the_ones_applied(
        reference_model_dir: Path) -> None:
    """The same looping answer is degenerate (so wrong) under the default thresholds and
    correct under thresholds a suite raised past it."""
    tok = str(reference_model_dir / "tokenizer.json")
    lenient = Thresholds(compression_ratio=1e9, repeated_4gram=1.0, tail_repeats=1e9,
                         word_salad=1.0, char_entropy=1e9, mixed_script=1.0)
    outcomes = []
    for thresholds in (Thresholds(), lenient):
        config = LongContextConfig("lc", "long_context", None, (512,), ("passkey",), samples=1,
                                   max_tokens=400, thresholds=thresholds)
        [rec] = run_answering(tok, config, lambda it: f" {it.answer}." + LOOP).records
        outcomes.append((rec["correct"], bool(rec["degenerate"])))
    assert outcomes == [(False, True), (True, False)]
