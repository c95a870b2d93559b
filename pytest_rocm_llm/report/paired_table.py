"""The paired run's table, one row per check with both builds side by side, and what its
verdicts do to the exit status (issue 14 item 5).

    check        | sglang 0.5.23 | sglang 0.5.24 | delta [98% CI]         | verdict
    -------------+---------------+---------------+------------------------+----------
    decode_speed | 18.05 tok/s   | 16.25 tok/s   | -10.0% [-10.1%, -9.8%] | REGRESSED

Performance deltas are relative (%), accuracy deltas absolute (points); an inconclusive row
says under the table why and how many trials per build would decide.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.verdicts.paired import PairedVerdict, level
from pytest_rocm_llm.verdicts.status import PairedStatus

InconclusivePolicy = Literal["fail", "pass"]


def _value(v: PairedVerdict, x: float) -> str:
    if not math.isfinite(x):
        return "-"
    if v.delta_kind == "absolute":  # a proportion: accuracy
        return f"{x:.1%}"
    return f"{x:.4g}{' ' + v.unit if v.unit else ''}"


def _delta(v: PairedVerdict) -> str:
    if not math.isfinite(v.delta):
        return "-"
    if v.delta_kind == "absolute":
        text = f"{v.delta * 100:+.1f} pts"
        interval = (f"[{v.ci_low * 100:+.1f}, {v.ci_high * 100:+.1f}]"
                    if math.isfinite(v.ci_low) else "[no interval]")
    else:
        text = f"{v.delta:+.1%}"
        interval = (f"[{v.ci_low:+.1%}, {v.ci_high:+.1%}]" if math.isfinite(v.ci_low)
                    else "[no interval]")
    return f"{text} {interval}"


def paired_rows(rows: Sequence[PairedVerdict]) -> list[tuple[str, str, str, str, str]]:
    """check, the incumbent's value, the candidate's, delta [CI], verdict: what every output of
    a paired run shows (this table, the Markdown summary)."""
    return [(r.check, _value(r, r.incumbent), _value(r, r.candidate), _delta(r),
             r.status.word) for r in rows]


def format_paired_table(rows: Sequence[PairedVerdict], build_a: str, build_b: str) -> str:
    """check | build_a (the incumbent) | build_b (the candidate) | delta [CI] | verdict."""
    # A sequential look's interval is at the alpha that look spends: one level per look.
    levels = {level(r.alpha) for r in rows} or {"98%"}
    ci = f"delta [{levels.pop()} CI]" if len(levels) == 1 else "delta [CI, level per row]"
    table = [("check", build_a, build_b, ci, "verdict"), *paired_rows(rows)]
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    lines += [f"{r.status.word}: {r.detail}" for r in rows
              if r.status in (PairedStatus.INCONCLUSIVE, PairedStatus.UNPAIRED)]
    return "\n".join(lines)


def paired_failures(rows: Sequence[PairedVerdict],
                    inconclusive: InconclusivePolicy = "fail") -> list[PairedVerdict]:
    """The verdicts that fail the run: every "regressed", and "inconclusive" unless the
    user passes them (``--llm-inconclusive=pass``) or its items cannot decide its margin
    (reported with that reason, never a failure)."""
    if inconclusive not in ("fail", "pass"):
        raise ConfigError(f"--llm-inconclusive={inconclusive!r}: expected 'fail' (the default: "
                          "an undecided check fails the run) or 'pass'")
    return [r for r in rows if r.status.failing or (
        r.status == PairedStatus.INCONCLUSIVE and inconclusive == "fail" and r.decidable)]


def paired_exit_status(rows: Sequence[PairedVerdict],
                       inconclusive: InconclusivePolicy = "fail") -> bool:
    """True when the run must FAIL (exit status 1): any "regressed", or any "inconclusive"
    under the default policy. False: the candidate may go ahead."""
    return bool(paired_failures(rows, inconclusive))


def recording_mode(mode: str, verdict: PairedVerdict | None,
                   inconclusive: InconclusivePolicy = "fail") -> str:
    """The baseline mode a paired check is judged with: ``--llm-update-baselines`` /
    ``--llm-regen-all`` store the candidate's values only where the candidate passed its
    pair; a regressed (or, unless told otherwise, undecided) check keeps the stored baseline
    it is judged against ("check")."""
    if verdict is None or mode == "check":
        return mode
    return "check" if paired_failures([verdict], inconclusive) else mode

