"""A workload's paired trials (performance/paired.py): balanced order turned to the build
already up, the same seed for trial i of both builds, results kept per build in time order."""

from __future__ import annotations

from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.performance.paired import (
    PairedRuns,
    oriented_order,
    run_paired,
)
from pytest_rocm_llm.performance.workloads import WorkloadResult


def workload() -> Workload:
    return Workload(name="decode", kind="single_stream", input_tokens=8, output_tokens=4,
                    requests=2, warmup=0, seed=11, profile=None, api="generate")


def test_the_order_starts_with_the_build_already_up() -> None:
    assert oriented_order(2, None) == ["A", "B", "B", "A"]
    assert oriented_order(2, "baseline") == ["A", "B", "B", "A"]
    assert oriented_order(3, "candidate") == ["B", "A", "A", "B", "B", "A"]


def test_trial_i_of_both_builds_answers_the_same_prompts() -> None:
    calls: list[tuple[str, int]] = []

    def run_once(build: str, w: Workload) -> WorkloadResult:
        calls.append((build, w.seed))
        speed = 10.0 if build == "baseline" else 9.0
        return WorkloadResult(w, [], {"output_speed_tok_s": speed + len(calls) / 100}, [],
                              [], [])

    trials = run_paired(workload(), 2, run_once, running="candidate")
    assert calls == [("candidate", 11), ("baseline", 11), ("baseline", 7930),
                     ("candidate", 7930)]
    assert trials.order == ("B", "A", "A", "B")
    a, b = trials.values("output_speed_tok_s")  # type: ignore[misc]
    assert a == [10.02, 10.03] and b == [9.01, 9.04]
    merged = trials.merged("candidate")
    assert merged.metrics["output_speed_tok_s"] == (9.01 + 9.04) / 2
    assert len(merged.trials) == 2


def test_trials_run_once_per_session_and_a_failure_is_kept() -> None:
    runs = PairedRuns(trials=1)
    n = 0

    def run_once(build: str, w: Workload) -> WorkloadResult:
        nonlocal n
        n += 1
        return WorkloadResult(w, [], {"x": 1.0}, [], [], [])

    first = runs.get("s", workload(), run_once)
    assert runs.get("s", workload(), run_once) is first and n == 2

    def broken(build: str, w: Workload) -> WorkloadResult:
        raise OSError("down")

    other = Workload(name="agg", kind="single_stream", input_tokens=8, output_tokens=4,
                     requests=2, warmup=0, seed=1, profile=None, api="generate")
    for _ in range(2):
        try:
            runs.get("s", other, broken)
        except OSError as exc:
            assert str(exc) == "down"
