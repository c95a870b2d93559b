"""Where a run's wall time goes: provisioning, flag checks, each server's start and stop,
each workload and evaluation. No pytest in here.

Shown at the end of a run and written to the results file, so a slow run says which phase
was slow (a cold engine cache, a server that loads for minutes, a workload on a busy host)
instead of leaving a single total to guess from. A workload or evaluation that is the first
to need its server includes that server's start, which is also listed on its own line.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

# The order phases are listed in, and what each kind covers.
KINDS = ("provision", "flag-check", "server-start", "workload", "evaluation", "server-stop")


@dataclass(frozen=True)
class Phase:
    kind: str
    name: str  # what it was for, e.g. "smoke/reference" or "vllm environment"
    seconds: float
    ok: bool = True


@dataclass
class PhaseLog:
    rows: list[Phase] = field(default_factory=list)

    @contextmanager
    def measure(self, kind: str, name: str) -> Iterator[None]:
        """Time the block; a block that raises is recorded as failed, then re-raised."""
        t0 = time.monotonic()
        ok = False
        try:
            yield
            ok = True
        finally:
            self.rows.append(Phase(kind, name, time.monotonic() - t0, ok))

    def add(self, kind: str, name: str, seconds: float, ok: bool = True) -> None:
        self.rows.append(Phase(kind, name, seconds, ok))

    def to_json(self) -> list[dict[str, Any]]:
        return [asdict(p) for p in self.rows]

    def extend_json(self, rows: Iterable[dict[str, Any]]) -> None:
        self.rows.extend(Phase(**r) for r in rows)

    def totals(self) -> dict[str, float]:
        out = dict.fromkeys(KINDS, 0.0)
        for p in self.rows:
            out[p.kind] = out.get(p.kind, 0.0) + p.seconds
        return {k: v for k, v in out.items() if v > 0 or any(p.kind == k for p in self.rows)}

    def render(self) -> list[str]:
        rank = {k: i for i, k in enumerate(KINDS)}
        rows = sorted(self.rows, key=lambda p: rank.get(p.kind, len(KINDS)))
        width = max((len(p.name) for p in rows), default=0)
        lines = [f"{p.kind:12} {p.name.ljust(width)} {p.seconds:8.1f} s"
                 + ("" if p.ok else "  (failed)") for p in rows]
        totals = self.totals()
        if totals:
            lines.append("total by kind: " + ", ".join(f"{k} {v:.0f} s"
                                                       for k, v in totals.items()))
        return lines
