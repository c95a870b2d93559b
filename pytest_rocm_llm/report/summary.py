"""The run as Markdown for a CI job's page (``--llm-summary FILE``; the recipe appends it to
``$GITHUB_STEP_SUMMARY``): the outcome first, then what needs attention with its reason, then
the verdict table and a paired run's table. The rows are the terminal's own
(``table.row``, ``paired_table.paired_rows``), so the page and the log never disagree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pytest_rocm_llm.report.paired_table import paired_rows
from pytest_rocm_llm.report.run_report import RunReport
from pytest_rocm_llm.report.table import HEADER, by_profile, row
from pytest_rocm_llm.verdicts.status import Status


def _cell(text: str) -> str:
    # A pipe would end the cell; a newline the row.
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(_cell(c) for c in header) + " |",
            "|" + "---|" * len(header),
            *("| " + " | ".join(_cell(c) for c in r) + " |" for r in rows)]


def markdown(report: RunReport) -> str:
    """The summary of one run, once its exit status is known (0: the build may go ahead)."""
    verdicts, status = report.verdicts, report.exit_status
    paired = report.paired.verdicts if report.paired is not None else ()
    where = ", ".join(sorted({f"{v.suite} on {v.target}" for v in verdicts})) or "no checks"
    outcome = "PASS" if status == 0 else f"FAIL (pytest exit status {status})"
    counts = Counter(v.status.word for v in verdicts)
    lines = [f"## rocm-llm: {where}", "",
             f"**{outcome}**" + (": " + ", ".join(f"{n} {w}" for w, n in sorted(counts.items()))
                                 if counts else "")]
    attention = [f"- `{v.suite}/{v.check}` ({v.profile}): {v.status.word}"
                 + (f": {_cell(v.message.splitlines()[0])}" if v.message.strip() else "")
                 for v in verdicts if v.status != Status.PASS]
    attention += [f"- `{p.check}` (paired): the candidate is {p.status.word}"
                  + (f": {_cell(p.detail)}" if p.detail else "")
                  for p in (report.paired.failing if report.paired is not None else [])]
    if report.unjudged:
        attention.append(f"- {_cell(report.unjudged)}")
    if attention:
        lines += ["", "### Needs attention", "", *attention]
    for (target, suite, profile), vs in by_profile(verdicts).items():
        lines += ["", f"### {suite} [{target}] profile {profile}", "",
                  *_table(HEADER, [row(v) for v in vs])]
    if paired:
        lines += ["", "### Paired run: incumbent vs candidate", "",
                  *_table(("check", "incumbent", "candidate", "delta [CI]", "verdict"),
                          paired_rows(paired))]
    return "\n".join(lines) + "\n"
