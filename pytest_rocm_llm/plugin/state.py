"""The plugin layer's shared state: stash keys and the one mapping of bad input to a usage
error, used by the hooks (plugin.py) and the fixtures (fixtures.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite_model import Suite
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.report.collector import RunCollector
from pytest_rocm_llm.serving.pool import ServerPool
from pytest_rocm_llm.verdicts.baselines import BaselineCache

if TYPE_CHECKING:
    from pytest_rocm_llm.correctness.runs import EvalRuns  # noqa: F401  (named in the keys' type arguments)
    from pytest_rocm_llm.performance.runs import WorkloadRuns  # noqa: F401
    from pytest_rocm_llm.report.run_report import RunReport  # noqa: F401

SETTINGS_KEY = pytest.StashKey[Settings]()
POOL_KEY = pytest.StashKey[ServerPool]()
SUITE_KEY = pytest.StashKey[Suite]()
RUNS_KEY = pytest.StashKey["WorkloadRuns"]()
EVALS_KEY = pytest.StashKey["EvalRuns"]()
COLLECTOR_KEY = pytest.StashKey[RunCollector]()
BASELINES_KEY = pytest.StashKey[BaselineCache]()
STOP_AFTER_KEY = pytest.StashKey[list[tuple[str, str]]]()
REPORT_KEY = pytest.StashKey["RunReport"]()  # the ended run, as every output reads it
STOP_RUN_KEY = pytest.StashKey[str]()  # an xdist worker's usage error, found at collection
PLAN_STATUS_KEY = pytest.StashKey[int]()  # --llm-plan: the exit status (report.plan_status)


@contextmanager
def usage_errors() -> Iterator[None]:
    """Bad input found by the pytest-free layers stops the run as a usage error, same words."""
    try:
        yield
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
