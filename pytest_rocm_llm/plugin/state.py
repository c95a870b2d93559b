"""The plugin layer's shared state: the run's one session object (everything a run holds
between its hooks and its fixtures, in ``config.stash`` under one key), the per-item keys,
and the one mapping of bad input to a usage error."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite_model import Suite
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.report.collector import RunCollector
from pytest_rocm_llm.verdicts.baselines import BaselineCache

if TYPE_CHECKING:
    from pytest_rocm_llm.correctness.runs import EvalRuns
    from pytest_rocm_llm.performance.runs import WorkloadRuns
    from pytest_rocm_llm.report.run_report import RunReport
    from pytest_rocm_llm.serving.pool import ServerPool
    from pytest_rocm_llm.serving.server import LLMServer
    from pytest_rocm_llm.verdicts.paired_trials import PairedRuns


@dataclass
class RunSession:
    """One pytest run (one per process: the xdist controller and each worker have theirs)."""

    settings: Settings
    baselines: BaselineCache
    collector: RunCollector = field(default_factory=RunCollector)
    pool: ServerPool | None = None  # set by the llm_pool fixture, once a test needs a server
    runs: WorkloadRuns | None = None
    evals: EvalRuns | None = None
    plan_status: int | None = None  # --llm-plan: the exit status (report.plan_status)
    stop_run: str | None = None  # an xdist worker's usage error, found at collection
    report: RunReport | None = None  # the ended run, as every output reads it
    # A paired run (llm_paired): the workloads' trials and the candidate's evaluations.
    paired_trials: PairedRuns | None = None
    candidate_evals: EvalRuns | None = None
    # A paired run: /server_info of each (suite, profile, build), read once while that
    # server is up (one build's servers run at a time, so both are never live together);
    # and the servers each workload's trials ran on (for provenance when a later check
    # reads the cached trials: asking the pool again would relaunch a stopped server).
    server_info: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    trial_servers: dict[tuple[str, str], dict[str, LLMServer]] = field(default_factory=dict)

    def servers(self) -> ServerPool:
        """The run's server pool; only a test that asked for a server reaches here."""
        assert self.pool is not None, "the llm_pool fixture has not run"
        return self.pool


SESSION_KEY = pytest.StashKey[RunSession]()
SUITE_KEY = pytest.StashKey[Suite]()  # an item's suite
STOP_AFTER_KEY = pytest.StashKey[list[tuple[str, str]]]()  # profiles an item uses last


def run_session(config: pytest.Config) -> RunSession:
    return config.stash[SESSION_KEY]


@contextmanager
def usage_errors() -> Iterator[None]:
    """Bad input found by the pytest-free layers stops the run as a usage error, same words."""
    try:
        yield
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
