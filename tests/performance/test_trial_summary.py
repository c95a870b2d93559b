"""A workload run as trials says, in its one-line summary, the spread between trials: the
run-to-run noise its baseline gate uses."""

from __future__ import annotations

from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.performance.runs import summarize
from pytest_rocm_llm.performance.workloads import WorkloadResult


def test_the_summary_shows_each_trial_and_their_spread():
    w = Workload("decode", "single_stream", None, "generate", 10, 10, 3, trials=3)
    trials = [{"output_speed_tok_s": v} for v in (11.0, 12.0, 13.0)]
    r = WorkloadResult(w, [], {"succeeded": 3, "requests": 3, "output_speed_tok_s": 12.0},
                       [], trials)
    assert summarize(r).endswith("3 trials: output_speed_tok_s 11.0 12.0 13.0 (SD 1.00, "
                                 "CV 8.3%)")
    one = WorkloadResult(w, [], {"succeeded": 3, "requests": 3, "output_speed_tok_s": 12.0})
    assert "trials" not in summarize(one)
