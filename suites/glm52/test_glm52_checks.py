"""Every check declared in suite.toml ([checks]), one test each. What a check reads (a
workload) runs once and is shared; each verdict needs its absolute floor and its stored
baseline (baselines/<target>/glm52.json), and is judged only after the run's preconditions
(all requests succeeded, rate, cache-hit ratio, exact lengths)."""

from __future__ import annotations


def test_check(llm_check, llm_judge) -> None:
    llm_judge(llm_check)
