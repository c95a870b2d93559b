"""A paired run's evaluation on both builds: McNemar on the same items for an accuracy check
only, and the greedy outputs compared by item."""

from __future__ import annotations

from types import SimpleNamespace

from pytest_rocm_llm.correctness.result import EvalResult
from pytest_rocm_llm.plugin.paired_checks import paired_eval


def result(correct: list[bool], responses: list[str]) -> EvalResult:
    return EvalResult("arithmetic", "arithmetic", {}, tuple(
        {"id": f"q{i}", "correct": c, "response": r}
        for i, (c, r) in enumerate(zip(correct, responses))))


def test_accuracy_is_paired_by_item_and_changed_outputs_are_counted() -> None:
    a = result([True, True, False, True], ["4", "9", "x", "7"])
    b = result([True, False, False, True], ["4", "8", "x", "7 "])
    check = SimpleNamespace(name="arithmetic_accuracy", metric="accuracy")
    verdict, outputs = paired_eval(check, a, b)  # type: ignore[arg-type]
    assert verdict is not None and verdict.n == 4 and verdict.pairs == (0.0, 1.0)
    assert outputs == "outputs changed on 2 of 4 prompts (compared by response text)"


def test_a_metric_other_than_accuracy_gets_no_accuracy_verdict() -> None:
    a = result([True, False], ["1", "2"])
    check = SimpleNamespace(name="arithmetic_answers", metric="invalid_rate")
    verdict, outputs = paired_eval(check, a, a)  # type: ignore[arg-type]
    assert verdict is None
    assert outputs == "outputs changed on 0 of 2 prompts (compared by response text)"
