"""One check's view of its run, handed to each check's glue (judging, paired_checks): the
run session (settings, collector, baselines, a paired run's trials and candidate evaluations),
the check's suite and target, and how infrastructure failures are worded. The run's state is
the session's, read through here, never copied."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_rocm_llm.plugin.state import RunSession
from pytest_rocm_llm.report.paired_table import recording_mode
from pytest_rocm_llm.verdicts.judge import BaselineCache
from pytest_rocm_llm.verdicts.verdict import Mode

if TYPE_CHECKING:
    from pytest_rocm_llm.config.settings import Settings
    from pytest_rocm_llm.config.suite_model import Suite
    from pytest_rocm_llm.config.targets import Target
    from pytest_rocm_llm.correctness.runs import EvalRuns
    from pytest_rocm_llm.report.collector import RunCollector
    from pytest_rocm_llm.verdicts.paired import PairedVerdict
    from pytest_rocm_llm.verdicts.paired_trials import PairedRuns


@dataclass(frozen=True)
class CheckContext:
    """One check's view of its run."""

    run: RunSession
    suite: Suite
    target: Target
    infrastructure: Callable[[Exception], str]
    infra_errors: tuple[type[Exception], ...]

    @property
    def settings(self) -> Settings:
        return self.run.settings

    @property
    def collector(self) -> RunCollector:
        return self.run.collector

    @property
    def baselines(self) -> BaselineCache:
        return self.run.baselines

    @property
    def paired(self) -> PairedRuns | None:
        """A paired run's trials (None: one build)."""
        return self.run.paired_trials

    @property
    def candidate_evals(self) -> EvalRuns | None:
        """A paired run's evaluations on the candidate."""
        return self.run.candidate_evals

    @property
    def mode(self) -> Mode:
        return self.settings.baseline_mode  # type: ignore[return-value]

    def recording_mode(self, paired: PairedVerdict | None) -> Mode:
        """The baseline mode a check is judged with (a paired run stores the candidate only
        where it passed its pair)."""
        if paired is None:
            return self.mode
        return recording_mode(self.mode, paired,  # type: ignore[return-value]
                              self.settings.inconclusive)
