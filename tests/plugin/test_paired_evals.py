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


def test_items_that_cannot_decide_the_margin_are_reported_not_failed() -> None:
    # The run: 16 arithmetic items, none answered differently, 2-point margin.
    from pytest_rocm_llm.report.paired_table import paired_failures

    a = result([True] * 10 + [False] * 6, ["x"] * 16)
    check = SimpleNamespace(name="arithmetic_accuracy", metric="accuracy")
    config = SimpleNamespace(paired_margin=2.0, paired_discordance=0.05)
    verdict, _ = paired_eval(check, a, a, config)  # type: ignore[arg-type]
    assert verdict is not None and verdict.status == "inconclusive"
    assert not verdict.decidable and "16 items cannot decide it" in verdict.detail
    assert paired_failures([verdict], "fail") == []


def test_a_drop_the_interval_places_below_zero_still_fails_undecidable_or_not() -> None:
    from pytest_rocm_llm.report.paired_table import paired_failures

    a = result([True] * 40, ["x"] * 40)
    b = result([True] * 20 + [False] * 20, ["x"] * 40)
    check = SimpleNamespace(name="arithmetic_accuracy", metric="accuracy")
    verdict, _ = paired_eval(check, a, b, SimpleNamespace(paired_margin=2.0))  # type: ignore[arg-type]
    assert verdict is not None and verdict.status == "regressed"
    assert paired_failures([verdict], "pass") == [verdict]


def test_the_eval_declares_its_margin() -> None:
    a = result([True] * 30 + [False] * 10, ["x"] * 40)
    b = result([True] * 29 + [False] * 11, ["x"] * 40)
    check = SimpleNamespace(name="arithmetic_accuracy", metric="accuracy")
    verdict, _ = paired_eval(check, a, b, SimpleNamespace(paired_margin=30.0))  # type: ignore[arg-type]
    assert verdict is not None and verdict.margin == 0.30 and verdict.status == "pass"


def test_long_context_is_paired_on_the_items_of_its_weakest_length() -> None:
    def lc(correct: dict[int, list[bool]]) -> EvalResult:
        records = tuple({"id": f"kv@{n}/{i}/0.5", "length": n, "correct": c,
                         "output": "x"} for n, cs in correct.items() for i, c in enumerate(cs))
        metrics = {f"accuracy@{n}": sum(cs) / len(cs) for n, cs in correct.items()}
        return EvalResult("long_context", "long_context", {
            **metrics, "accuracy_min": min(metrics.values())}, records)

    a = lc({512: [True] * 3, 1024: [True, True, False]})
    b = lc({512: [True] * 3, 1024: [True, False, False]})
    check = SimpleNamespace(name="long_context_accuracy", metric="accuracy_min")
    verdict, _ = paired_eval(check, a, b)  # type: ignore[arg-type]
    assert verdict is not None and verdict.n == 3  # the 1024-token items only
    assert verdict.incumbent == 2 / 3 and verdict.candidate == 1 / 3


def test_a_check_without_a_paired_verdict_gets_a_row_saying_why() -> None:
    from pytest_rocm_llm.report.paired_table import format_paired_table, paired_failures
    from pytest_rocm_llm.verdicts.paired import unpaired

    row = unpaired("spec_speedup", "output_speed_tok_s", "x", "higher",
                   "relative to decode: measured on the incumbent only")
    assert paired_failures([row], "fail") == []
    text = format_paired_table([row], "incumbent", "candidate")
    assert "NO PAIRED VERDICT" in text and "measured on the incumbent only" in text


def test_a_workloads_trials_wait_only_for_the_checks_this_session_runs() -> None:
    from pytest_rocm_llm.plugin.paired_checks import paired_checks_of, selected_checks
    from pytest_rocm_llm.plugin.state import SUITE_KEY

    def check(name: str, workload: str, relative_to: str | None = None) -> SimpleNamespace:
        return SimpleNamespace(name=name, workload=workload, relative_to=relative_to,
                               metric="tok_s", unit="tok/s", direction="higher")

    def item(c: SimpleNamespace, suite: str) -> SimpleNamespace:
        return SimpleNamespace(callspec=SimpleNamespace(params={"llm_check": c}),
                               stash={SUITE_KEY: SimpleNamespace(name=suite)})

    speed, ttft, ratio = check("speed", "decode"), check("ttft", "decode"), \
        check("ratio", "decode", "other")
    items = [item(speed, "smoke"), item(ratio, "smoke"), item(ttft, "glm52"),
             SimpleNamespace(stash={})]
    selected = selected_checks(items, "smoke")  # type: ignore[arg-type]
    assert selected == {"speed", "ratio"}
    paired = paired_checks_of([c for c in (speed, ttft, ratio) if c.name in selected],  # type: ignore[misc]
                              "decode")
    assert [c.name for c in paired] == ["speed"]  # a relative check is not paired
