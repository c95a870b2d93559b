"""The plan's checks section: each check with its bounds, the evaluation or workload it
reads, its method, the source of its floor and what its baseline gate will do."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_rocm_llm.config.metric_facts import is_proportion
from pytest_rocm_llm.correctness.accuracy.config import paired_only_reason
from pytest_rocm_llm.verdicts.power import describe_gate

if TYPE_CHECKING:
    from pytest_rocm_llm.config.suite_model import Suite
    from pytest_rocm_llm.config.targets import Target
    from pytest_rocm_llm.verdicts.baselines import BaselineFile


def num(x: float) -> str:
    return f"{x:g}"


def check_lines(suite: Suite, target: Target, stored: BaselineFile | None) -> list[str]:
    out: list[str] = []
    w = out.append
    w("checks:")
    checks = suite.checks_for(target)
    if not checks:
        w("  (none)")
    for check in checks:
        unit = f" {check.unit}" if check.unit else ""
        bounds = []
        if check.min is not None:
            bounds.append(f">= {num(check.min)}{unit}")
        if check.max is not None:
            bounds.append(f"<= {num(check.max)}{unit}")
        paired_only = (paired_only_reason(suite.eval_for(check.eval, target))
                       if check.eval else None)
        if paired_only is not None:
            bounds = [f"no absolute floor (paired-only: {paired_only})"]
        elif check.reference_score is not None:
            bounds.append(f">= floor around {num(check.reference_score)} at alpha "
                          f"{num(check.alpha)} over the items scored, counting the published "
                          "score's sampling error when its n is stored")
        reads = (f"workload {check.workload}" if check.workload
                 else f"evaluation {check.eval} ({suite.eval_for(check.eval, target).kind})")
        if check.relative_to:
            reads += f" relative to workload {check.relative_to}"
        w(f"  {check.name}: {check.metric} {' and '.join(bounds)} on {reads}")
        if check.method:
            w(f"    method: {check.method}")
        w(f"    source: {check.source}")
        entry = stored.entries.get(check.name) if stored else None
        runs = suite.workload_for(check.workload, target).trials if check.workload else 1
        items = (getattr(suite.eval_for(check.eval, target), "limit", None) if check.eval
                 else None)
        if check.workload and is_proportion(check.metric):
            # a share of the workload's requests: its binomial power is over that many
            items = suite.workload_for(check.workload, target).requests
        if paired_only is not None:
            w("    baseline gate: none (paired-only)")
            continue
        w("    baseline gate: " + describe_gate(
            check.gate, entry.measurement if entry else None, runs, items, check.unit,
            pending=stored.pending.get(check.name) if stored else None))

    return out
