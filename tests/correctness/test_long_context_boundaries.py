"""Long-context at its boundaries: the shortest length a task fits in, needles placed at
depth 0 kept in order, variable chains kept apart when the generator draws a name or a
value twice, the thresholds table built from the degeneration thresholds, and what
``run_long_context`` reports when a whole length fails, when everything fails, when
accuracy is flat and when it falls more than once (a stand-in sglang /generate over real
HTTP answering per prompt)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pytest_rocm_llm.client.completions import Endpoint
from pytest_rocm_llm.correctness.degeneration import Thresholds
from pytest_rocm_llm.correctness.long_context import (
    Item,
    LongContextConfig,
    _Encoder,
    _needles,
    _thresholds_table,
    build_item,
    build_items,
    run_long_context,
)
from pytest_rocm_llm.correctness.result import EvalResult
from tests.toy_engine import JsonHandler, serving

# What the stand-in answers for an item: the output text, or None for a failed request.
Answer = Callable[[Item], "str | None"]


@pytest.fixture(scope="module")
def tok(reference_model_dir: Path) -> str:
    return str(reference_model_dir / "tokenizer.json")


@pytest.fixture(scope="module")
def enc(tok: str) -> _Encoder:
    return _Encoder(tok)


def run(tok: str, config: LongContextConfig, answer: Answer) -> EvalResult:
    enc = _Encoder(tok)
    items = {it.input_ids: it for it in build_items(config, tok)}

    class Handler(JsonHandler):

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_error(404)

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            it = items[tuple(body["input_ids"])]
            text = answer(it)
            if text is None:
                self.reply({"error": "out of memory"}, status=400)
                return
            out = enc(text)[: body["sampling_params"]["max_new_tokens"]]
            self.reply({"text": "", "output_ids": out, "meta_info": {
                "prompt_tokens": it.length, "completion_tokens": len(out),
                "finish_reason": {"type": "stop"}}})

    with serving(Handler) as url:
        return run_long_context(config, Endpoint(url), tok, lambda m: None)


def passkey(lengths: tuple[int, ...], samples: int, max_tokens: int = 16) -> LongContextConfig:
    return LongContextConfig("lc", "long_context", None, lengths, ("passkey",),
                             samples=samples, seed=7, max_tokens=max_tokens)


def right(it: Item) -> str:
    return f" {it.answer}."


def test_a_length_holding_only_the_instructions_and_needles_is_too_short(
        enc: _Encoder) -> None:
    with pytest.raises(ValueError) as e:
        build_item(enc, "passkey", 10, 0, 0.5, 0)
    found = re.fullmatch(r"long-context length 10 is too short for task 'passkey': its "
                         r"instructions and needles alone take (\d+) tokens", str(e.value))
    assert found, str(e.value)
    used = int(found[1])
    # no room left for a single filler token: still too short
    with pytest.raises(ValueError, match=f"length {used} is too short .* take {used} tokens"):
        build_item(enc, "passkey", used, 0, 0.5, 0)
    assert len(build_item(enc, "passkey", used + 1, 0, 0.5, 0).input_ids) == used + 1


def test_a_chain_at_depth_zero_is_assigned_in_order(enc: _Encoder) -> None:
    """Depth 0 puts every needle of the asked chain at the same depth: they still come in
    the order they are assigned, or the chain cannot be followed."""
    it = build_item(enc, "variable", 512, 0, 0.0, 0)
    text = enc.decode(it.input_ids)
    assigned = re.findall(r"VAR (\w+) = (\w+)\.", text)
    asked = re.search(r"what is the value of VAR (\w+)\?", text)
    assert asked
    # follow the asked variable back to its number: each link assigned before it is read
    position = {name: i for i, (name, _) in enumerate(assigned)}
    name, steps = asked[1], 0
    while not name.isdigit():
        source = assigned[position[name]][1]
        if not source.isdigit():
            assert position[source] < position[name]
        name, steps = source, steps + 1
    assert (name, steps) == (it.answer, 4)
    # at depth 0 the asked chain comes first, ending with the asked variable
    assert assigned[3][0] == asked[1]


class Repeating(random.Random):
    """A generator that draws its first variable name and its first value twice."""

    def __init__(self) -> None:
        super().__init__(0)
        self.letters = list("QWERT" * 2)
        self.values = [42424, 42424]

    def choice(self, seq: Any) -> Any:
        return self.letters.pop(0) if self.letters else super().choice(seq)

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        return self.values.pop(0) if self.values else super().randrange(start, stop, step)


def test_variable_chains_never_share_a_name_or_a_starting_value() -> None:
    _, question, answer, placed = _needles("variable", Repeating(), 0.5)
    assigned = [re.fullmatch(r" VAR (\w+) = (\w+)\.", t) for _, t in placed]
    assert all(assigned)
    names = [m[1] for m in assigned if m]
    assert len(names) == 12 and len(set(names)) == 12  # 3 chains of 4, none merged
    starts = [m[2] for m in assigned if m and m[2].isdigit()]
    assert len(starts) == 3 and len(set(starts)) == 3 and answer == "42424"
    assert f"VAR {names[3]} =" in question


def test_the_thresholds_table_has_every_threshold_typed_defaulted_and_non_negative() -> None:
    table = _thresholds_table()
    assert set(table.model_fields) == set(Thresholds.__dataclass_fields__)
    assert Thresholds(**table.model_validate({}).model_dump()) == Thresholds()
    raised = table.model_validate({"window_bytes": 2048, "tail_repeats": 0}).model_dump()
    assert (raised["window_bytes"], raised["tail_repeats"]) == (2048, 0)  # 0 is allowed
    for bad in ({"window_bytes": -1}, {"repeated_4gram": -0.1},
                {"window_bytes": 1.5},  # an integer threshold stays an integer
                {"unknown": 1}):  # a suite's typo is an error, as in every table
        with pytest.raises(ValidationError, match=next(iter(bad))):
            table.model_validate(bad)


def test_a_length_whose_requests_all_failed_is_left_out_of_the_accuracies(tok: str) -> None:
    r = run(tok, passkey((256, 320, 384), samples=2),
            lambda it: None if it.length == 256 else right(it))
    assert r.metrics == {
        "accuracy@320": 1.0, "degenerate@320": 0.0, "passkey_accuracy@320": 1.0,
        "accuracy@384": 1.0, "degenerate@384": 0.0, "passkey_accuracy@384": 1.0,
        "accuracy_min": 1.0, "degenerate_outputs": 0.0, "samples": 4.0}
    assert len(r.problems) == 1 and r.problems[0].startswith(
        "2 request(s) failed, e.g. passkey@256: ")
    # flat accuracy is no fall
    assert r.details == ("accuracy by length: 320: 100%, 384: 100%",)


def test_when_every_request_fails_nothing_is_measured(tok: str) -> None:
    r = run(tok, passkey((256, 320), samples=1), lambda it: None)
    assert r.metrics == {} and r.details == ()
    assert r.problems[1:] == ("no prompt produced output",)
    assert [rec["ok"] for rec in r.records] == [False, False]


def test_the_steepest_of_several_falls_is_named(tok: str) -> None:
    """Accuracy 100% -> 75% -> 0% -> 100% -> 75%: three falls; the steepest is the middle
    one, which neither starts highest, nor is the first, nor the last."""
    correct = {256: 4, 320: 3, 384: 0, 448: 4, 512: 3}
    config = passkey(tuple(correct), samples=4)
    r = run(tok, config, lambda it: right(it) if it.sample < correct[it.length] else " 1.")
    assert (r.name, r.kind) == ("lc", "long_context")
    assert [r.metrics[f"accuracy@{n}"] for n in correct] == [1.0, 0.75, 0.0, 1.0, 0.75]
    assert r.details == (
        "accuracy by length: 256: 100%, 320: 75%, 384: 0%, 448: 100%, 512: 75%",
        "accuracy falls most from 75% at 320 tokens to 0% at 384 tokens")


def test_a_degenerate_output_is_recorded_clipped_and_quoted(tok: str, enc: _Encoder) -> None:
    loop = " the cat sat on the mat and then" * 30
    r = run(tok, passkey((256,), samples=1, max_tokens=400), lambda it: right(it) + loop)
    [rec] = r.records
    text = f" {rec['answer']}." + loop
    assert len(text) > 300 and enc.decode(enc(text)) == text
    assert rec["output"] == text[:200] and rec["correct"] is False
    detectors = {"compression_ratio", "repeated_4gram", "tail_loop", "char_run", "bad_chars",
                 "word_salad", "char_entropy", "mixed_script"}
    found = [re.fullmatch(r"(\w+) (\S+) \(threshold (\S+)\)", f) for f in rec["degenerate"]]
    assert found and all(m is not None and m[1] in detectors for m in found)
    said = [d for d in r.details if d.startswith("degenerate output: ")]
    assert len(said) == len(found)
    for m, d in zip(found, said):
        assert m is not None
        assert d == (f"degenerate output: passkey@256 sample 0: {m[1]} = {m[2]} (threshold "
                     f"{m[3]}); output starts {text[:80] + '...'!r}")
