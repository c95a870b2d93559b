"""What every check of a run shares (the settings, the suite, the target, the collector, the
baselines, a paired run's trials), handed to each check's glue (judging, paired_checks)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
    """What every check of a run shares."""

    settings: Settings
    suite: Suite
    target: Target
    collector: RunCollector
    baselines: BaselineCache
    infrastructure: Callable[[Exception], str]
    infra_errors: tuple[type[Exception], ...]
    paired: PairedRuns | None = None  # a paired run's trials (None: one build)
    candidate_evals: EvalRuns | None = None  # a paired run's evaluations on the candidate

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
