"""The end-of-run verdict table: check | measured | floor | baseline | delta | verdict,
grouped by suite and profile."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pytest_rocm_llm.verdicts.status import Status
from pytest_rocm_llm.verdicts.verdict import Verdict

if TYPE_CHECKING:
    from pytest_rocm_llm.report.run_report import RunReport

HEADER = ("check", "measured", "floor", "baseline", "delta", "verdict")



def _num(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    return f"{v:.4g}{' ' + unit if unit else ''}"


def row(v: Verdict) -> tuple[str, ...]:
    base = "none until measured (reported)" if v.gate == "none until measured" else "-"
    if v.baseline is not None:
        base = _num(v.baseline, v.unit) + (" (published)" if v.baseline_kind == "published"
                                           else "")
    if v.baseline is not None and v.gated is False:
        base += " (reported)"  # no run-to-run spread: shown, not gated, no alpha claimed
    elif v.baseline is not None and v.mde_pct is not None:
        base += f" (detects {v.mde_pct:.0f}%)"
    measured = _num(v.measured, v.unit)
    if v.spread and v.spread_kind == "between_runs":
        measured += f" ±{v.spread:.2g} SD/{v.runs} trials"
    elif v.spread:
        measured += f" ±{v.spread:.2g}"
    delta = "-" if v.delta_pct is None else f"{v.delta_pct:+.1f}%"
    return (v.check, measured, v.floor or "-", base, delta, v.status.word)


def by_profile(verdicts: Iterable[Verdict]) -> dict[tuple[str, str, str], list[Verdict]]:
    """(target, suite, profile) -> its rows, in the order they came: one table each."""
    groups: dict[tuple[str, str, str], list[Verdict]] = {}
    for v in verdicts:
        groups.setdefault((v.target, v.suite, v.profile), []).append(v)
    return groups


def render(verdicts: Iterable[Verdict]) -> list[str]:
    lines: list[str] = []
    for (target, suite, profile), vs in by_profile(verdicts).items():
        rows = [HEADER] + [row(v) for v in vs]
        widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
        lines.append(f"{suite} [{target}] profile {profile}")
        for i, r in enumerate(rows):
            lines.append("  " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))
                         .rstrip())
            if i == 0:
                lines.append("  " + "-+-".join("-" * w for w in widths))
        for v in vs:
            if v.status == Status.NOT_JUDGED:  # under the table: a reason would stretch a column
                lines.append(f"  {v.check}: {v.status.word}: "
                             f"{(v.message or '?').splitlines()[0]}")
            for ref in v.references:
                lines.append(f"  {v.check}: reference {ref}")
            for note in v.notes:
                lines.append(f"  {v.check}: note: {note}")
    return lines


def write_paired(tr: Any, report: RunReport) -> None:
    """A paired run's sections: the side-by-side table, then what else changed."""
    from pytest_rocm_llm.report.paired_table import format_paired_table

    run = report.paired
    if run is None or (not run.verdicts and not run.builds):
        return
    tr.section("rocm-llm paired run: incumbent vs candidate")
    tr.write_line(f"candidate: {run.candidate.split(': ', 1)[1]}; "
                  f"sequential trials: {run.design}")
    if run.verdicts:
        for line in format_paired_table(run.verdicts, "incumbent", "candidate").splitlines():
            tr.write_line(line)
        if run.failing:
            tr.write_line("the candidate fails the paired gate: " + ", ".join(
                f"{v.check} {v.status}" for v in run.failing), red=True)
    for name, entry in sorted(run.builds.items()):
        if not {"versions", "server_info_diff", "outputs"} & set(entry):
            continue  # per-trial values: in --llm-results only
        tr.write_line("")
        tr.write_line(f"{name}:")
        for build, versions in entry.get("versions", {}).items():
            tr.write_line(f"  {build}: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
        for key in ("server_info_diff", "outputs"):
            if key in entry:
                for line in str(entry[key]).splitlines():
                    tr.write_line(f"  {line}")


def write_summary(tr: Any, report: RunReport) -> None:
    """The run's closing sections: verdicts, a paired run's table, baselines written,
    workload summaries, and why a run whose tests passed is failed."""
    if report.verdicts:
        tr.section("rocm-llm verdicts")
        for line in render(report.verdicts):
            tr.write_line(line)
    write_paired(tr, report)
    if report.changes or report.write_errors:
        tr.section("rocm-llm baselines written")
        for change in report.changes:
            tr.write_line(change.describe())
        for err in report.write_errors:
            tr.write_line(err, red=True)
    if report.phases.rows:
        tr.section("rocm-llm time by phase")
        for line in report.phases.render():
            tr.write_line(line)
    if report.workloads:
        tr.section("rocm-llm workloads")
        tr.write_line(f"target {report.target or '-'}; output speed = "
                      "(completion_tokens - 1) / (e2e - TTFT)")
        for w in report.workloads:
            tr.write_line(f"{w.suite}/{w.name} [{w.kind}]: {w.summary}")
    if report.unjudged:
        tr.write_line(report.unjudged, red=True)
