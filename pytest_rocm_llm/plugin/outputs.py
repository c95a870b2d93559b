"""What a run leaves behind once it ends (controller only): each output one record in one
registry (``OUTPUTS``, open to other packages through the ``pytest_rocm_llm.outputs`` entry
point group), and each reads only the one run report (report/run_report.py): the results file
for CI dashboards, the Allure report's environment and categories, the Markdown summary for a
CI job's page."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.kinds import Registry
from pytest_rocm_llm.report.run_report import RunReport


class RunOutput(Protocol):
    """Writes the ended run's report where the run asked for it; nothing when it did not."""

    name: str

    def write(self, config: pytest.Config, s: Settings, report: RunReport) -> None: ...


@dataclass(frozen=True)
class ResultsFile:
    """--llm-results: one JSON document, written atomically."""

    name: str = "results"

    def write(self, config: pytest.Config, s: Settings, report: RunReport) -> None:
        from pytest_rocm_llm.verdicts.baselines import write_atomic

        if s.results_path is not None:
            write_atomic(s.results_path, report.to_json())


@dataclass(frozen=True)
class AllureRunFiles:
    """Allure's environment.properties and categories.json, beside its results."""

    name: str = "allure"

    def write(self, config: pytest.Config, s: Settings, report: RunReport) -> None:
        from pytest_rocm_llm.plugin import allure as allure_report

        if allure_report.active(config) and report.verdicts:
            allure_report.write_run_files(Path(config.option.allure_report_dir),
                                          report.environment(socket.gethostname()))


@dataclass(frozen=True)
class StepSummary:
    """--llm-summary: appended, as GitHub's step summary file expects of every step."""

    name: str = "summary"

    def write(self, config: pytest.Config, s: Settings, report: RunReport) -> None:
        from pytest_rocm_llm.report.summary import markdown

        if s.summary_path is not None:
            with open(s.summary_path, "a", encoding="utf-8") as fh:
                fh.write(markdown(report))


RESULTS, ALLURE, SUMMARY = ResultsFile(), AllureRunFiles(), StepSummary()
OUTPUTS: Registry[RunOutput] = Registry("an output", "pytest_rocm_llm.outputs", {
    name: f"pytest_rocm_llm.plugin.outputs:{name.upper()}"
    for name in ("results", "allure", "summary")})


def write_outputs(config: pytest.Config, s: Settings, report: RunReport) -> None:
    """The controller's end of a run: every output, from the ended run's report (its exit
    status decided)."""
    for output in OUTPUTS:
        output.write(config, s, report)
