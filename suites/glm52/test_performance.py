"""Performance checks declared in suite.toml ([checks]), one test per check. Each workload
runs once and its result is shared by the checks that read it; a floor is judged only after
the run's preconditions (all requests succeeded, rate, cache-hit ratio, exact lengths)."""

from __future__ import annotations

from pytest_rocm_llm.checks import Check, verify


def test_performance(llm_perf_check: Check, llm_workload) -> None:
    verify(llm_perf_check, llm_workload(llm_perf_check.workload))
