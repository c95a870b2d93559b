"""The run as one typed, versioned record, built once when the run ends: the seam every output
reads (the terminal's closing sections, the ``--llm-results`` file, the ``--llm-summary``
page, Allure's run files). An output never reaches back into the collector, the settings or
the workload runs, so the page, the log and the file cannot tell different stories.

``to_json`` is the results file, and ``FORMAT_VERSION`` its schema: a change to what it
writes is a new version, declared here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pytest_rocm_llm.phases import PhaseLog
from pytest_rocm_llm.report.paired_table import InconclusivePolicy, paired_failures
from pytest_rocm_llm.verdicts.baselines import Change
from pytest_rocm_llm.verdicts.paired import PairedVerdict
from pytest_rocm_llm.verdicts.verdict import Verdict

if TYPE_CHECKING:
    from pytest_rocm_llm.config.settings import Settings
    from pytest_rocm_llm.performance.runs import WorkloadRuns
    from pytest_rocm_llm.report.collector import RunCollector

FORMAT = "pytest-rocm-llm results"
# 2: the builds are "incumbent" and "candidate" ("baseline" is a stored value only)
FORMAT_VERSION = 2


@dataclass(frozen=True)
class PairedRun:
    """A paired run's part: the candidate, its sequential design and what was decided."""

    candidate: str  # Candidate.describe(): "candidate: <what differs>"
    trials: int  # the design's minimum trials per build
    budget: int
    design: str  # SequentialDesign.describe()
    inconclusive: InconclusivePolicy
    verdicts: tuple[PairedVerdict, ...] = ()
    # per suite/profile: each build's versions, what /server_info says changed, outputs
    builds: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def failing(self) -> list[PairedVerdict]:
        return paired_failures(self.verdicts, self.inconclusive)


@dataclass(frozen=True)
class WorkloadSummary:
    suite: str
    name: str
    kind: str
    summary: str  # performance.runs.summarize: the terminal's one line per workload


@dataclass(frozen=True)
class RunReport:
    target: str | None
    baseline_mode: str
    baselines_dir: str
    container_image: str | None
    rootdir: str
    verdicts: tuple[Verdict, ...] = ()
    changes: tuple[Change, ...] = ()
    write_errors: tuple[str, ...] = ()
    phases: PhaseLog = field(default_factory=PhaseLog)
    paired: PairedRun | None = None  # None: not a paired run
    workloads: tuple[WorkloadSummary, ...] = ()
    exit_status: int | None = None  # pytest's, once the run has decided it
    unjudged: str | None = None  # why a passing run is failed: checks that were never judged

    def with_outcome(self, exit_status: int, unjudged: str | None) -> RunReport:
        return replace(self, exit_status=exit_status, unjudged=unjudged)

    def counts(self) -> dict[str, int]:
        return dict(Counter(str(v.status) for v in self.verdicts))

    def run_json(self) -> dict[str, Any]:
        run: dict[str, Any] = {"target": self.target, "baseline_mode": self.baseline_mode,
                               "baselines_dir": self.baselines_dir,
                               "container_image": self.container_image, "rootdir": self.rootdir}
        if self.paired is not None:
            run.update(candidate=self.paired.candidate, pair_trials=self.paired.trials,
                       pair_budget=self.paired.budget, inconclusive=self.paired.inconclusive)
        return run

    def to_json(self) -> dict[str, Any]:
        """The ``--llm-results`` file: one JSON document for CI dashboards."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "run": self.run_json(),
            "counts": self.counts(),
            "verdicts": [v.to_json() for v in self.verdicts],
            "baseline_changes": [
                {"file": str(c.file), "check": c.check, "old": c.old, "new": c.new,
                 "unit": c.unit} for c in self.changes],
            "phases": self.phases.to_json(),
            # A paired run: both builds' values and the verdict of each check on their
            # difference.
            **({"paired": [v.to_json() for v in self.paired.verdicts],
                "builds": dict(self.paired.builds)} if self.paired is not None else {}),
        }

    def environment(self, host: str) -> dict[str, str]:
        """Allure's environment.properties: what the run's verdicts were measured on."""
        def joined(attr: str) -> str:
            return ", ".join(sorted({getattr(v, attr) for v in self.verdicts} - {""}))

        return {"target": joined("target"), "engine": joined("engine"),
                "model": joined("model"), "suites": joined("suite"), "host": host,
                "baseline_mode": self.baseline_mode}


def build_report(collector: RunCollector, settings: Settings, runs: WorkloadRuns | None,
                 rootdir: str) -> RunReport:
    """The run's report from what the controller gathered (baselines already flushed)."""
    paired = None
    if settings.candidate is not None:
        from pytest_rocm_llm.verdicts.sequential import settings_design

        design = settings_design(settings)
        paired = PairedRun(candidate=settings.candidate.describe(), trials=design.minimum,
                           budget=design.budget, design=design.describe(),
                           inconclusive=settings.inconclusive,  # type: ignore[arg-type]
                           verdicts=tuple(collector.paired), builds=dict(collector.builds))
    workloads: tuple[WorkloadSummary, ...] = ()
    if runs is not None:
        from pytest_rocm_llm.performance.runs import summarize

        workloads = tuple(WorkloadSummary(suite, name, r.workload.kind, summarize(r))
                          for (suite, name), r in runs.results.items())
    s = settings
    return RunReport(target=s.target.name if s.target else None,
                     baseline_mode=s.baseline_mode, baselines_dir=str(s.baselines_dir),
                     container_image=s.container_image, rootdir=rootdir,
                     verdicts=tuple(collector.verdicts), changes=tuple(collector.changes),
                     write_errors=tuple(collector.write_errors), phases=collector.phases,
                     paired=paired, workloads=workloads)
