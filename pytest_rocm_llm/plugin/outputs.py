"""What a run leaves behind once it ends (controller only), every output read from the one
run report (report/run_report.py): the results file for CI dashboards, the Markdown summary
for a CI job's page, and the Allure report's environment and categories."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.report.run_report import RunReport


def write_run_outputs(config: pytest.Config, s: Settings, report: RunReport) -> None:
    """The controller's end of a run: the --llm-results file and Allure's run files."""
    if s.results_path is not None:
        from pytest_rocm_llm.verdicts.baselines import write_atomic

        write_atomic(s.results_path, report.to_json())
    from pytest_rocm_llm.plugin import allure as allure_report

    if allure_report.active(config) and report.verdicts:
        allure_report.write_run_files(Path(config.option.allure_report_dir),
                                      report.environment(socket.gethostname()))


def append_summary(s: Settings, report: RunReport) -> None:
    """--llm-summary: appended, as GitHub's step summary file expects of every step."""
    if s.summary_path is None:
        return
    from pytest_rocm_llm.report.summary import markdown

    with open(s.summary_path, "a", encoding="utf-8") as fh:
        fh.write(markdown(report))
