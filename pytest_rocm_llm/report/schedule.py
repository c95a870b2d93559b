"""A paired run's schedule, as the plan shows it: which build's server starts when, how many
restarts, and the run's time (report/run_time.py). No pytest, no server in here.

It follows what a run does: the suite's checks grouped by profile (the default first, as
plugin/collection.py orders tests), each workload's trials in the order
verdicts/paired_trials.py runs them (whole A-B-B-A blocks, turned to start with the build
already up: the minimum, then a block at a time while a paired check is undecided; the
expected trials to a decision simulated through the sequential gate at the target's trial
CV), each
evaluation on both builds, the one already up first, and one build's servers at a time: where one
server fits (a GPU node) the other build's server stops and later restarts; where two fit
(the CPU reference) it is parked and continued (serving/parking.py), never restarted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_rocm_llm.config.builds import CANDIDATE, INCUMBENT
from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite_model import Suite
from pytest_rocm_llm.config.targets import Target
from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.report.run_time import estimate
from pytest_rocm_llm.verdicts.paired_trials import oriented_order
from pytest_rocm_llm.verdicts.sequential import (
    expected_trials,
    parks_servers,
    settings_design,
)

if TYPE_CHECKING:
    from pytest_rocm_llm.config.checks import Check

SHORT = {INCUMBENT: "A", CANDIDATE: "B"}


@dataclass
class _Sim:
    park: bool  # the idle build's servers are parked (two fit), else stopped
    up: dict[tuple[str, str], str] = field(default_factory=dict)  # (profile, build) -> state
    started: set[tuple[str, str]] = field(default_factory=set)
    starts: int = 0
    restarts: int = 0
    continues: int = 0
    running: str | None = None

    def stop(self, profile: str) -> None:
        """Both builds' servers of ``profile`` stopped (fresh servers for the next block)."""
        for key in [k for k in self.up if k[0] == profile]:
            del self.up[key]

    def use(self, profile: str, build: str) -> str:
        """What serving on (profile, build) takes: '' (already up), start, restart or
        continue; the other build's servers are parked or stopped."""
        for other, was in list(self.up.items()):
            if other[1] != build and was == "up":
                if self.park:
                    self.up[other] = "parked"
                else:
                    del self.up[other]
        self.running = build
        key = (profile, build)
        state = self.up.get(key)
        self.up[key] = "up"
        if state == "up":
            return ""
        if state == "parked":
            self.continues += 1
            return "continue"
        self.starts += 1
        if key in self.started:
            self.restarts += 1
            return "restart"
        self.started.add(key)
        return "start"


def _shorter(w: Workload, target: Target) -> str:
    """A caution when ``w``'s trial decodes fewer tokens than the target's CV was measured
    at: its trials spread more, and take more to decide, than the estimate says."""
    tokens = w.requests * w.output_tokens
    if target.trial_cv_tokens is None or tokens >= target.trial_cv_tokens:
        return ""
    return (f" (the CV is of {target.trial_cv_tokens}-token trials; this one decodes "
            f"{tokens}, so it spreads more and may take more trials)")


def paired_schedule(suite: Suite, target: Target, settings: Settings) -> list[str]:
    """The plan's schedule lines for a paired run (none without a candidate)."""
    if settings.candidate is None:
        return []
    checks = suite.checks_for(target)
    rank = {name: n + 1 for n, name in enumerate(suite.profiles)}
    rank[suite.default_profile] = 0
    ordered = sorted(checks, key=lambda c: rank.get(suite.check_profile(c, target), 0))
    # A server in a container is not parked (SIGSTOP would reach the runtime's client only).
    in_containers = any(b.image is not None for b in settings.builds)
    sim = _Sim(park=parks_servers(settings))
    lines: list[str] = []
    seen: set[str] = set()
    design = settings_design(settings)
    same, stuck = expected_trials(design, target.trial_cv)
    slow, _ = expected_trials(design, target.trial_cv, -0.05)
    # Every further block ends on the build it began with: two switches on a node where
    # one server fits (a restart each), two continues where the idle one is parked.
    switch = "continue" if sim.park else "restart"
    # Fresh servers per block: both builds' start where the idle one is parked (then 2
    # continues); where one fits, the block's last slot restarts the first build again.
    per_block_starts = 2 if sim.park else 3
    each = (f"{per_block_starts} restarts: fresh servers of both builds"
            + (", and 2 continues" if sim.park else "") if design.per_block
            else f"2 {switch}s")
    more = (f"; then one block at a time while a paired check is undecided, up to "
            f"{2 * design.budget} trials (each block: {each})"
            if design.budget > design.minimum else "")
    further = 0.0
    most = 0  # further blocks at the budget
    for check in ordered:
        profile = suite.check_profile(check, target)
        what = check.workload or check.eval
        if what is None or what in seen:
            continue
        seen.add(what)
        if check.workload is not None and check.relative_to is None:
            w = suite.workload_for(check.workload, target)
            order = oriented_order(design.minimum, sim.running)
            steps = []
            for slot, side in enumerate(order):
                if design.per_block and slot and slot % 4 == 0:
                    sim.stop(profile)
                build = INCUMBENT if side == "A" else CANDIDATE
                action = sim.use(profile, build)
                steps.append(side + (f" ({action})" if action else ""))
            lines.append(f"  {profile}: workload {w.name}, {len(order)} trials: "
                         + " - ".join(steps) + more)
            names = [c.name for c in checks if c.workload == w.name and c.relative_to is None]
            lines.append(f"    paired checks {', '.join(names)}: about {same:.1f} trials per "
                         f"build to a decision at trial CV {target.trial_cv:.1%} if unchanged "
                         f"({slow:.1f} if 5% slower; {stuck:.0%} undecided at the budget), "
                         f"budget {design.budget}{_shorter(w, target)}")
            further += (same - design.minimum) / 2
            most += (design.budget - design.minimum) // 2
        elif check.eval is not None:
            steps = []
            # Started on the build already up: one switch per evaluation, not two.
            for build in ((CANDIDATE, INCUMBENT) if sim.running == CANDIDATE
                          else (INCUMBENT, CANDIDATE)):
                action = sim.use(profile, build)
                steps.append(SHORT[build] + (f" ({action})" if action else ""))
            lines.append(f"  {profile}: evaluation {check.eval} on both builds: "
                         + " - ".join(steps))
            lines += _decidable_lines(suite.eval_for(check.eval, target), checks)
        else:
            lines.append(f"  {profile}: workload {check.workload} (relative check): the "
                         "incumbent only")
    fresh = "; both builds' servers are fresh for every block" if design.per_block else ""
    how = ("the idle build's server is parked (SIGSTOP) and continued: two fit"
           if sim.park else "the idle build's server stops: a container's is not parked"
           if in_containers else "the idle build's server stops: one fits at a time") + fresh
    head = [f"paired schedule: A = incumbent, B = candidate; {how}",
            f"  sequential trials: {design.describe()}; trial CV {target.trial_cv:.1%} "
            f"({target.trial_cv_source})" + (
                f"; instance CV {design.instance_cv:.1%} ({target.instance_cv_source})"
                if design.per_block else ""),
            *lines,
            f"  server starts: {sim.starts} ({sim.restarts} restart(s)), "
            f"continues: {sim.continues}, for the minimum trials; about "
            f"{(per_block_starts if design.per_block else 2) * further:.0f} "
            f"more {'restart' if design.per_block else switch}s for the {further:.1f} further "
            "blocks expected"]
    # Further blocks restart both builds' servers where one fits: counted as starts.
    restarting = (per_block_starts if design.per_block else 0 if sim.park else 2)
    run = estimate(suite, target, settings, starts=sim.starts + round(restarting * further),
                   starts_bound=sim.starts + restarting * most, trials=same,
                   budget_trials=design.budget, builds=2)
    head += ["  " + ln for ln in run.lines()]
    return head


def _decidable_lines(config: Any, checks: list[Check]) -> list[str]:
    """Per paired accuracy check of an eval: can its items decide the eval's paired margin
    (verdicts/paired_items.py)? An item count that cannot is reported, never failed."""
    from pytest_rocm_llm.verdicts.paired_items import decidability

    margin = getattr(config, "paired_margin", None)
    if margin is None:  # parity, long-context: no per-item accuracy to pair
        return []
    n = config.items_scored
    out = []
    for c in checks:
        if c.eval == config.name and c.metric.startswith("accuracy"):
            expected = c.reference_score or c.min  # a floor of 0 says nothing: then 50%
            d = decidability(n, margin / 100, expected or None, config.paired_discordance)
            verdict = {True: "decidable", False: "NOT DECIDABLE (reported, not failed)",
                       None: "decidability known when it runs"}[d.decidable]
            out.append(f"    paired check {c.name}: {verdict}: {d.describe()}")
    return out
