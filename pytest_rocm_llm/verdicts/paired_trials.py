"""A workload's paired trials: the incumbent (A) and the candidate (B) alternating in
whole A-B-B-A blocks, trial i of each build on the same prompts, block after block until the
workload's paired checks have decided or the budget is spent (verdicts/sequential.py). No
pytest in here.

Trial i of both builds uses the seed the workload's own i-th trial would (fresh prompts per
trial, as ``run_workload`` does), so A and B answer the same requests and neither build
serves a prompt it has already cached. One build's servers run at a time (the pool stops the
other's), so the order is turned to start with the build already up: B-A-A-B is as balanced
as A-B-B-A and saves a server restart, which on a large model costs minutes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from pytest_rocm_llm.config.builds import CANDIDATE, INCUMBENT
from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.once import RunOnce
from pytest_rocm_llm.performance.workloads import WorkloadResult
from pytest_rocm_llm.progress_log import report
from pytest_rocm_llm.verdicts.paired import PairedVerdict, balanced_order
from pytest_rocm_llm.verdicts.sequential import (
    BLOCK_TRIALS,
    PairedCheck,
    SequentialDesign,
    SequentialGate,
)

log = logging.getLogger(__name__)
TRIAL_SEED_STEP = 7919  # run_workload's step between trials' seeds: the same prompts per trial
BUILD_OF = {"A": INCUMBENT, "B": CANDIDATE}


def oriented_order(trials: int, first: str | None) -> list[str]:
    """``balanced_order(trials)``, mirrored (A<->B) when ``first`` is the candidate's build
    name: start with the build whose server is running."""
    order = balanced_order(trials)
    if first == CANDIDATE:
        order = ["B" if x == "A" else "A" for x in order]
    return order


@dataclass(frozen=True)
class PairedTrials:
    """Per-trial results of both builds, each list in time order, and the order they ran."""

    workload: Workload
    order: tuple[str, ...]
    incumbent: tuple[WorkloadResult, ...]
    candidate: tuple[WorkloadResult, ...]
    # each paired check's verdict from the sequential gate (None: a trial lacked its metric)
    verdicts: Mapping[str, PairedVerdict | None] = field(default_factory=dict)

    def values(self, metric: str) -> tuple[list[float], list[float]] | None:
        """Both builds' per-trial values of ``metric``; None when a trial lacks it."""
        a = [r.metrics.get(metric) for r in self.incumbent]
        b = [r.metrics.get(metric) for r in self.candidate]
        if any(v is None for v in a + b):
            return None
        return [float(v) for v in a if v is not None], [float(v) for v in b if v is not None]

    def merged(self, build: str) -> WorkloadResult:
        """One build's trials as one result (metrics averaged over trials, ``trials`` kept),
        what the stored baseline and floors judge."""
        results = self.incumbent if build == INCUMBENT else self.candidate
        trials = [dict(r.metrics) for r in results]
        metrics: dict[str, float | None] = {}
        for key in trials[0]:
            values = [m[key] for m in trials if m.get(key) is not None]
            metrics[key] = (sum(v for v in values if v is not None) / len(values)
                            if len(values) == len(trials) else None)
        records = [rec for r in results for rec in r.records]
        problems = [f"trial {t + 1}: {p}" for t, r in enumerate(results) for p in r.problems]
        return WorkloadResult(self.workload, records, metrics, results[-1].steps, trials,
                              problems)


RunTrial = Callable[[str, Workload], WorkloadResult]  # (build name, one trial's workload)
Look = Callable[["PairedTrials"], bool]  # True: no more trials needed


def run_paired(w: Workload, design: SequentialDesign, run_trial: RunTrial,
               running: str | None = None, progress: Callable[[str], None] | None = None,
               look: Look | None = None, new_block: Callable[[], None] | None = None
               ) -> PairedTrials:
    """Whole A-B-B-A blocks of ``w`` (turned to start with the build up), at least
    ``design.minimum`` trials per build, then a block at a time until ``look`` says no
    more are needed or ``design.budget`` is reached; ``run_trial(build, wl)`` runs one
    trial on that build's server (the caller's pool makes it the only one up). With
    ``design.per_block``, ``new_block()`` runs before every block but the first: it stops
    both builds' servers, so the block's trials start fresh ones."""
    block = oriented_order(BLOCK_TRIALS, running)
    done: dict[str, list[WorkloadResult]] = {"A": [], "B": []}
    order: list[str] = []
    while True:
        if order and design.per_block and new_block is not None:
            report(log, f"{w.name}: block {len(order) // 4 + 1} on fresh servers of both "
                        "builds (the block is the verdict's unit)", progress)
            new_block()
        for side in block:
            i = len(done[side])
            one = replace(w, seed=w.seed + TRIAL_SEED_STEP * i, trials=1)
            order.append(side)
            report(log, f"{w.name}: paired trial {len(order)} (up to {2 * design.budget}) "
                        f"on the {BUILD_OF[side]} build (trial {i + 1}, seed {one.seed})",
                   progress)
            done[side].append(run_trial(BUILD_OF[side], one))
        trials = PairedTrials(w, tuple(order), tuple(done["A"]), tuple(done["B"]))
        n = len(done["A"])
        # The look runs at the budget too: it turns an undecided check inconclusive there.
        decided = n >= design.minimum and (look is None or look(trials))
        if decided or n >= design.budget:
            return trials


@dataclass
class PairedRuns:
    """Each workload's paired trials, run once per session and shared by its checks, with
    its checks' sequential verdicts."""

    design: SequentialDesign
    progress: Callable[[str], None] | None = None
    _once: RunOnce[tuple[str, str], PairedTrials] = field(default_factory=RunOnce)

    def get(self, suite: str, w: Workload, run_trial: RunTrial, running: str | None = None,
            checks: Sequence[PairedCheck] = (),
            new_block: Callable[[], None] | None = None) -> PairedTrials:
        """``w``'s trials and the verdicts of ``checks`` (every paired check reading ``w``:
        the workload runs more blocks while one of them is undecided)."""

        def run() -> PairedTrials:
            gate = SequentialGate(self.design, checks)

            def look(t: PairedTrials) -> bool:
                done = gate.look(len(t.incumbent), t.order, t.values)
                undecided = [c.name for c in checks if c.name not in gate.decided]
                if undecided and not done:
                    report(log, f"{w.name}: after {len(t.incumbent)} trials per build still "
                                f"undecided: {', '.join(undecided)}; one more block",
                           self.progress)
                return done

            trials = run_paired(w, self.design, run_trial, running, self.progress,
                                look if checks else None, new_block)
            return replace(trials, verdicts=dict(gate.verdicts))

        return self._once.get((suite, w.name), run)

    @property
    def results(self) -> dict[tuple[str, str], PairedTrials]:
        return self._once.results


def slots(order: Sequence[str]) -> int:
    """Server switches an order needs from its first slot (each one a stop and a start)."""
    return sum(1 for x, y in zip(order, order[1:]) if x != y)
