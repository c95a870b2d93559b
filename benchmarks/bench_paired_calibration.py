"""Calibration of the paired gate at its defaults (issue 22 items 2 and 6): how often an
unchanged build is called "regressed" or "inconclusive", how often a 5% slowdown is caught,
and how many trials per build that takes, for the sequential rule against the fixed-size one.

Each simulated run measures builds A and B in balanced A-B-B-A order on a node whose speed
drifts linearly by ``drift`` per slot (one trial's time) and varies trial to trial with
coefficient of variation ``cv``: log-normal, or Student-t with 3 degrees of freedom scaled to
the same standard deviation (heavy tails: one trial in ~70 is off by more than 3 CVs). The
verdicts come from the production code: ``verdicts.sequential.SequentialGate`` looking after
every block from ``--llm-pair-trials`` (the minimum) to the budget, each look judged by
``verdicts.paired.paired_performance``; "fixed" judges the same runs once, at the budget,
with the whole alpha. The defaults are the shipped ones: minimum DEFAULT_PAIR_TRIALS, the
budget ``default_budget(target.trial_cv)``, margin 5%, tolerance 2%, alpha 0.02.

Targets: unchanged build "regressed" <= 1% and "inconclusive" <= 5%, a 5% slowdown
"regressed" >= 90%, at each target's trial CV (config/targets.py: the CPU reference's is a
placeholder to be measured, MI355X's is assumed; ``--cv`` takes a measured one).

    python benchmarks/bench_paired_calibration.py            # 4000 runs per row (~1 min)
    python benchmarks/bench_paired_calibration.py --quick    # 400 runs per row (CI, seconds)
    python benchmarks/bench_paired_calibration.py --cv 0.05 --budget 40

Exit status 1 when a sequential row misses a target (seeded, so it is the code's doing).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_rocm_llm.config.builds import DEFAULT_PAIR_TRIALS  # noqa: E402
from pytest_rocm_llm.config.targets import TARGETS  # noqa: E402
from pytest_rocm_llm.verdicts.paired import (  # noqa: E402
    DEFAULT_ALPHA,
    balanced_order,
    paired_performance,
)
from pytest_rocm_llm.verdicts.sequential import (  # noqa: E402
    INCONCLUSIVE_TARGET,
    MAX_BUDGET,
    POWER_TARGET,
    PairedCheck,
    SequentialDesign,
    SequentialGate,
    default_budget,
)

REGRESSED_TARGET = 0.01
SLOWDOWN = 0.05
CHECK = PairedCheck("decode", "output_tok_s", "tok/s", "higher")


def values(rng: np.random.Generator, runs: int, slots: int, effect: float, cv: float,
           drift: float, noise: str, instance_cv: float = 0.0,
           whole_run: bool = False) -> np.ndarray:
    """Per run, per slot of ``balanced_order``: the measured speed. ``instance_cv``: each
    server sits at its own level, a fresh pair of servers per A-B-B-A block (``whole_run``:
    one server per build for the whole run, the gate before issue 22's per-block design)."""
    if noise == "t3":  # variance of t(3) is 3: scaled to the stated CV
        eps = rng.standard_t(3, size=(runs, slots)) * cv / np.sqrt(3.0)
    else:
        eps = rng.normal(0.0, cv, size=(runs, slots))
    is_b = np.array([s == "B" for s in balanced_order(slots // 2)])
    if instance_cv:
        servers = 1 if whole_run else -(-slots // 4)
        levels = rng.normal(0.0, instance_cv, size=(runs, servers, 2))
        block = np.zeros(slots, dtype=int) if whole_run else np.arange(slots) // 4
        eps = eps + np.where(is_b, levels[:, block, 1], levels[:, block, 0])
    speed = np.exp(drift * np.arange(slots) + eps)  # log-linear: stays > 0 over any budget
    return 100.0 * speed * np.where(is_b, 1 + effect, 1.0)


def judge(row: np.ndarray, design: SequentialDesign, sequential: bool) -> tuple[str, int]:
    """One run's verdict and the trials per build it took."""
    order = balanced_order(design.budget)
    is_b = np.array([s == "B" for s in order])
    if not sequential:
        v = paired_performance(CHECK.name, CHECK.metric, CHECK.unit, CHECK.direction,
                               row[~is_b].tolist(), row[is_b].tolist(), order=order,
                               alpha=design.alpha, per_block=design.per_block)
        return v.status, design.budget
    gate = SequentialGate(design, [CHECK])
    for n in design.looks():
        head, b = row[:2 * n], is_b[:2 * n]
        a_vals, b_vals = head[~b].tolist(), head[b].tolist()
        if gate.look(n, order[:2 * n], lambda metric: (a_vals, b_vals)):  # noqa: B023
            v = gate.verdicts[CHECK.name]
            assert v is not None
            return v.status, n
    raise AssertionError("the gate looked past its budget")


def scenario(rng: np.random.Generator, runs: int, design: SequentialDesign, effect: float,
             cv: float, drift: float, noise: str, sequential: bool,
             blind: bool = False) -> tuple[dict[str, float], float]:
    """``blind``: one server per build for the whole run, judged per pair (the gate before
    issue 22 made the block of fresh servers its unit): the servers' levels are in the data
    but nowhere in the gate."""
    counts = {"pass": 0, "regressed": 0, "improved": 0, "inconclusive": 0}
    used = 0
    judged = replace(design, per_block=False) if blind else design
    for row in values(rng, runs, 2 * design.budget, effect, cv, drift, noise,
                      design.instance_cv, whole_run=blind):
        status, n = judge(row, judged, sequential)
        counts[status] += 1
        used += n
    return {k: c / runs for k, c in counts.items()}, used / runs


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="400 runs per row (CI)")
    ap.add_argument("--runs", type=int, default=None, help="simulated runs per row")
    ap.add_argument("--cv", type=float, action="append",
                    help="trial CV instead of the targets' (repeatable)")
    ap.add_argument("--minimum", type=int, default=DEFAULT_PAIR_TRIALS,
                    help="--llm-pair-trials (default: the shipped one)")
    ap.add_argument("--budget", type=int, default=None,
                    help="--llm-pair-budget (default: the shipped one at each CV)")
    ap.add_argument("--drift", type=float, default=-0.01,
                    help="linear drift per slot of the drift rows (default -0.01)")
    ap.add_argument("--seed", type=int, default=22)
    args = ap.parse_args(argv)
    runs = args.runs or (400 if args.quick else 4000)
    cvs = ([(f"cv {c:.1%}", c, "given") for c in args.cv] if args.cv else
           [(t.name, t.trial_cv, t.trial_cv_source) for t in TARGETS.values()
            if t.name in ("cpu", "mi355x")])
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    header = ("target", "cv", "noise", "drift/slot", "rule", "trials/build",
              "same: regressed", "same: inconclusive", "same: mean trials",
              "5% slower: regressed", "5% slower: mean trials", "meets targets")
    table: list[tuple[str, ...]] = []
    misses = 0
    # Where two servers fit natively (the CPU reference), both builds' servers are fresh for
    # every block and the servers' own levels come on top of the trial noise: held to the
    # targets at the measured instance CV, with the old whole-run-per-pair gate beside it.
    parked = [(f"{t.name} per block", t.trial_cv, t.instance_cv) for t in TARGETS.values()
              if t.name == "cpu" and t.instance_cv and not args.cv]
    for name, cv, inst in [(n, c, 0.0) for n, c, _ in cvs] + parked:
        budget = args.budget or default_budget(cv, DEFAULT_ALPHA, inst)
        design = SequentialDesign.of(args.minimum, budget, DEFAULT_ALPHA, bool(inst), inst)
        rows = ((("normal", 0.0),) if inst else
                (("normal", 0.0), ("t3", 0.0), ("normal", args.drift)))
        rules = ((True, False), (False, False)) + (((True, True),) if inst else ())
        for noise, drift in rows:
            for sequential, blind in rules:
                same, n_same = scenario(rng, runs, design, 0.0, cv, drift, noise, sequential,
                                        blind)
                slow, n_slow = scenario(rng, runs, design, -SLOWDOWN, cv, drift, noise,
                                        sequential, blind)
                ok = (same["regressed"] <= REGRESSED_TARGET
                      and same["inconclusive"] <= INCONCLUSIVE_TARGET
                      and slow["regressed"] >= POWER_TARGET)
                # A CV whose default budget is the cap cannot be held to the targets by any
                # default: reported as missed, beside the trials it would need.
                capped = args.budget is None and design.budget >= MAX_BUDGET
                misses += not ok and sequential and not blind and not capped
                span = (f"{design.minimum}-{design.budget}" if sequential
                        else str(design.budget))
                table.append((name, f"{cv:.1%}", noise, f"{drift:+.1%}",
                               ("sequential" if sequential else "fixed")
                               + (", one server pair per run" if blind else ""), span,
                               f"{same['regressed']:.1%}", f"{same['inconclusive']:.1%}",
                               f"{n_same:.1f}", f"{slow['regressed']:.1%}", f"{n_slow:.1f}",
                               "yes" if ok else "no (reported: the old design)" if blind else
                               f"no (reported: the budget is the {MAX_BUDGET}-trial cap)"
                               if capped else "no"))
    widths = [max(len(r[i]) for r in (header, *table)) for i in range(len(header))]
    print(f"paired gate calibration at the defaults: margin 5%, tolerance 2%, alpha "
          f"{DEFAULT_ALPHA}; {runs} simulated runs per row; targets: unchanged build "
          f"regressed <= {REGRESSED_TARGET:.0%} and inconclusive <= "
          f"{INCONCLUSIVE_TARGET:.0%}, a 5% slowdown regressed >= {POWER_TARGET:.0%}")
    for name, cv, source in cvs:
        print(f"  {name}: trial CV {cv:.1%} ({source})")
    for name, _, inst in parked:
        print(f"  {name}: fresh servers per block, instance CV {inst:.1%} "
              f"({TARGETS['cpu'].instance_cv_source})")
    for i, r in enumerate((header, *table)):
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if i == 0:
            print("-+-".join("-" * w for w in widths))
    print(f"sequential rows missing a target: {misses} "
          f"({runs} runs per row: +-{2 * (0.05 * 0.95 / runs) ** 0.5:.1%} at 5%)")
    print(f"({time.perf_counter() - start:.1f} s)")
    return 1 if misses else 0  # seeded: the same figures every run of the same code


if __name__ == "__main__":
    raise SystemExit(main())
