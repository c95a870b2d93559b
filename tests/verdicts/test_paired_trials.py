"""A workload's paired trials (verdicts/paired_trials.py): balanced order turned to the build
already up, the same seed for trial i of both builds, results kept per build in time order."""

from __future__ import annotations

from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.performance.workloads import WorkloadResult
from pytest_rocm_llm.verdicts.paired_trials import (
    PairedRuns,
    oriented_order,
    run_paired,
)
from pytest_rocm_llm.verdicts.sequential import PairedCheck, SequentialDesign


def workload() -> Workload:
    return Workload(name="decode", kind="single_stream", input_tokens=8, output_tokens=4,
                    requests=2, warmup=0, seed=11, profile=None, api="generate")


def test_the_order_starts_with_the_build_already_up() -> None:
    assert oriented_order(2, None) == ["A", "B", "B", "A"]
    assert oriented_order(2, "incumbent") == ["A", "B", "B", "A"]
    assert oriented_order(3, "candidate") == ["B", "A", "A", "B", "B", "A"]


def test_trial_i_of_both_builds_answers_the_same_prompts() -> None:
    calls: list[tuple[str, int]] = []

    def run_once(build: str, w: Workload) -> WorkloadResult:
        calls.append((build, w.seed))
        speed = 10.0 if build == "incumbent" else 9.0
        return WorkloadResult(w, [], {"output_speed_tok_s": speed + len(calls) / 100}, [],
                              [], [])

    trials = run_paired(workload(), SequentialDesign(2, 2), run_once, running="candidate")
    assert calls == [("candidate", 11), ("incumbent", 11), ("incumbent", 7930),
                     ("candidate", 7930)]
    assert trials.order == ("B", "A", "A", "B")
    a, b = trials.values("output_speed_tok_s")  # type: ignore[misc]
    assert a == [10.02, 10.03] and b == [9.01, 9.04]
    merged = trials.merged("candidate")
    assert merged.metrics["output_speed_tok_s"] == (9.01 + 9.04) / 2
    assert len(merged.trials) == 2


def test_trials_run_once_per_session_and_a_failure_is_kept() -> None:
    runs = PairedRuns(SequentialDesign(2, 2))
    n = 0

    def run_once(build: str, w: Workload) -> WorkloadResult:
        nonlocal n
        n += 1
        return WorkloadResult(w, [], {"x": 1.0}, [], [], [])

    first = runs.get("s", workload(), run_once)
    assert runs.get("s", workload(), run_once) is first and n == 4

    def broken(build: str, w: Workload) -> WorkloadResult:
        raise OSError("down")

    other = Workload(name="agg", kind="single_stream", input_tokens=8, output_tokens=4,
                     requests=2, warmup=0, seed=1, profile=None, api="generate")
    for _ in range(2):
        try:
            runs.get("s", other, broken)
        except OSError as exc:
            assert str(exc) == "down"


SPEED = PairedCheck("decode_speed", "output_speed_tok_s", "tok/s", "higher")


def speeds(b_factor: float, noise: list[float]):
    """A trial runner: the baseline at 100 tok/s, the candidate at 100 * b_factor, each
    trial times the next noise factor (cycled)."""
    calls: list[str] = []

    def run_once(build: str, w: Workload) -> WorkloadResult:
        calls.append(build)
        value = (100.0 if build == "incumbent" else 100.0 * b_factor)
        value *= noise[len(calls) % len(noise)]
        return WorkloadResult(w, [], {"output_speed_tok_s": value}, [], [], [])

    return calls, run_once


def test_blocks_run_until_the_checks_decide_and_stop_there() -> None:
    # A quiet node (0.2% spread) and an unchanged candidate: the first looks' intervals are
    # too wide at the alpha they spend (O'Brien-Fleming), a later one shows "not worse".
    calls, run_once = speeds(1.0, [1.0, 1.002, 0.998, 1.001, 0.999])
    runs = PairedRuns(SequentialDesign(2, 20))
    trials = runs.get("s", workload(), run_once, checks=[SPEED])
    verdict = trials.verdicts["decode_speed"]
    assert verdict is not None and verdict.status == "pass", verdict
    n = len(trials.incumbent)
    assert 2 < n < 20 and n % 2 == 0 and len(calls) == 2 * n  # whole blocks, stopped early
    assert "decided at look" in verdict.detail and verdict.n == n
    assert "".join(trials.order) == "ABBA" * (n // 2)


def test_an_undecided_check_runs_to_the_budget_and_says_what_would_decide() -> None:
    # 3% slower on a noisy node: between the tolerance and the margin, undecidable in 6.
    calls, run_once = speeds(0.97, [1.0, 1.06, 0.95, 1.03, 0.96, 1.05, 0.99])
    trials = PairedRuns(SequentialDesign(4, 6)).get("s", workload(), run_once, "candidate",
                                                    checks=[SPEED])
    verdict = trials.verdicts["decode_speed"]
    assert len(trials.incumbent) == 6 and trials.order[0] == "B"
    assert verdict is not None and verdict.status == "inconclusive"
    assert "undecided at the budget" in verdict.detail and verdict.n == 6


def test_without_checks_the_minimum_runs_in_whole_blocks() -> None:
    calls, run_once = speeds(1.0, [1.0])
    trials = run_paired(workload(), SequentialDesign.of(3, 8), run_once)
    assert len(trials.incumbent) == 4 and len(calls) == 8  # 3 rounded up to 2 blocks
