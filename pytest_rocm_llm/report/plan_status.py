"""Whether a planned run can go ahead, as an exit status a CI step can rely on.

``pytest --llm-plan`` runs no test, so pytest alone would exit 5 ("no tests ran") whatever the
plan found, and ``pytest --llm-plan ... && pytest ...`` could never reach the run. The plan
exits 0 when nothing blocks the run, else with the code of the first blocker below (every
blocker is listed in the output). The codes sit above pytest's own (0-5) so a plan's status is
never mistaken for a test outcome. No pytest in here.

=====  ===================================================================================
code   meaning
=====  ===================================================================================
0      the run can go ahead (notes under "needs attention" may remain, e.g. unset tuning)
10     an engine's own argument parser rejected a profile's flags (a build's, if paired)
11     a suite's model cannot be found (no --llm-model-path, variable or path)
12     pre-launch input is broken: a baseline file, evaluation data or a tool (the same
       checks a run makes before its first launch, e.g. a check a GPU run cannot judge)
13     the flags could not be checked: the engine environment could not be run
=====  ===================================================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum


class PlanStatus(IntEnum):
    GO = 0
    FLAGS_REJECTED = 10
    MODEL_MISSING = 11
    PREFLIGHT = 12
    FLAGS_UNCHECKED = 13


@dataclass(frozen=True)
class Blocker:
    status: PlanStatus
    text: str


def plan_status(blockers: Iterable[Blocker]) -> PlanStatus:
    """The exit status of a plan: the lowest code among its blockers, GO when there are none
    (rejected flags outrank an engine that could not be reached: they are certain)."""
    return min((b.status for b in blockers), default=PlanStatus.GO)


def status_lines(blockers: list[Blocker]) -> list[str]:
    """The plan's last words: what its exit status is and why."""
    status = plan_status(blockers)
    if status is PlanStatus.GO:
        return ["plan: the run can go ahead (exit 0)"]
    lines = [f"plan: the run is blocked (exit {int(status)}: "
             f"{status.name.lower().replace('_', ' ')}):"]
    lines += [f"  [{int(b.status)}] {b.text}" for b in blockers]
    return lines
