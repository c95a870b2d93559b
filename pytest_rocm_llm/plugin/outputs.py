"""What a run leaves behind once it ends (controller only): the results file for CI
dashboards, the Markdown summary for a CI job's page, and the Allure report's environment
and categories."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.report.collector import RunCollector


def write_run_outputs(config: pytest.Config, s: Settings, collector: RunCollector) -> None:
    """The controller's end of a run: the --llm-results file and Allure's run files."""
    run = {"target": s.target.name if s.target else None, "baseline_mode": s.baseline_mode,
           "baselines_dir": str(s.baselines_dir), "container_image": s.container_image,
           "rootdir": str(config.rootpath)}
    if s.results_path is not None:
        from pytest_rocm_llm.report.collector import results_document
        from pytest_rocm_llm.verdicts.baselines import write_atomic

        if s.candidate is not None:
            run["candidate"] = s.candidate.describe()
            from pytest_rocm_llm.verdicts.sequential import settings_design

            design = settings_design(s)
            run["pair_trials"] = design.minimum
            run["pair_budget"] = design.budget
            run["inconclusive"] = s.inconclusive
        write_atomic(s.results_path, results_document(
            collector.verdicts, run, collector.changes, collector.phases,
            collector.paired if s.candidate is not None else None, collector.builds))
    from pytest_rocm_llm.plugin import allure as allure_report

    if allure_report.active(config) and collector.verdicts:
        import socket

        def joined(attr: str) -> str:
            return ", ".join(sorted({getattr(v, attr) for v in collector.verdicts} - {""}))

        env = {"target": joined("target"), "engine": joined("engine"),
               "model": joined("model"), "suites": joined("suite"),
               "host": socket.gethostname(), "baseline_mode": s.baseline_mode}
        allure_report.write_run_files(Path(config.option.allure_report_dir), env)


def append_summary(s: Settings, collector: RunCollector, exit_status: int) -> None:
    """--llm-summary: appended, as GitHub's step summary file expects of every step."""
    if s.summary_path is None:
        return
    from pytest_rocm_llm.report.summary import markdown

    text = markdown(collector.verdicts, collector.paired if s.candidate is not None else [],
                    exit_status, s.inconclusive)  # type: ignore[arg-type]
    with open(s.summary_path, "a", encoding="utf-8") as fh:
        fh.write(text)
