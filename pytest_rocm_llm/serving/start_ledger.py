"""An account of server starts across processes: which engine, for whom, how long it loaded.

Server starts are what a run (and this project's own CI) spends most of its time on, and they
happen in many processes: pytest itself, xdist workers, pytester subprocesses. When
``PYTEST_ROCM_LLM_START_LEDGER`` names a file, every start and every readiness (or failure to
become ready) is appended to it as one JSON line, ``O_APPEND`` so concurrent writers never
interleave a line; ``PYTEST_ROCM_LLM_LEDGER_CONTEXT`` (inherited by child processes) says on
whose behalf, e.g. the outer test of a pytester run. Unset, nothing is written.

No pytest in here.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

LEDGER_ENV = "PYTEST_ROCM_LLM_START_LEDGER"
CONTEXT_ENV = "PYTEST_ROCM_LLM_LEDGER_CONTEXT"
ENGINES = ("sglang", "vllm")


def engine_of(argv: Sequence[str]) -> str:
    """Which engine a launch argv starts, by the engine module it runs (``-m
    sglang.launch_server``, ``-m vllm.entrypoints...``), else "other" (a test double)."""
    for arg in argv:
        for engine in ENGINES:
            if arg.startswith(engine + "."):
                return engine
    return "other"


def record(event: str, tag: str, name: str, argv: Sequence[str], **fields: object) -> None:
    path = os.environ.get(LEDGER_ENV)
    if not path:
        return
    line = json.dumps({"event": event, "tag": tag, "name": name, "engine": engine_of(argv),
                       "context": os.environ.get(CONTEXT_ENV, ""), "pid": os.getpid(),
                       "t": time.time(), **fields}, sort_keys=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Start:
    tag: str
    name: str
    engine: str
    context: str
    ready_s: float | None  # seconds to ready; None: never became ready (or not waited for)
    outcome: str  # "ready", "failed" or "started" (not waited for by its owner)


def lines_in(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.is_file() else 0


def read(path: Path, skip: int = 0) -> list[Start]:
    """Every start in the ledger (after its first ``skip`` lines: what an earlier run in the
    same ledger wrote), in start order, with its readiness joined in."""
    starts: dict[str, dict[str, object]] = {}
    if not path.is_file():
        return []
    for raw in path.read_text().splitlines()[skip:]:
        try:
            ev = json.loads(raw)
        except json.JSONDecodeError:
            continue  # a line cut short by a killed writer
        entry = starts.setdefault(ev["tag"], {"ready_s": None, "outcome": "started"})
        if ev["event"] == "start":
            entry.update(name=ev["name"], engine=ev["engine"], context=ev["context"])
        elif ev["event"] in ("ready", "failed"):
            entry.update(outcome=ev["event"], ready_s=ev.get("seconds"))
    return [Start(tag=tag, name=str(e.get("name", "?")), engine=str(e.get("engine", "other")),
                  context=str(e.get("context", "")), ready_s=e["ready_s"],  # type: ignore[arg-type]
                  outcome=str(e["outcome"]))
            for tag, e in starts.items()]


def engine_starts(starts: Iterable[Start]) -> list[Start]:
    return [s for s in starts if s.engine in ENGINES]


def account(starts: Sequence[Start]) -> list[str]:
    """Lines of a per-context table: engine starts, seconds spent loading, then the total."""
    by_context: dict[str, list[Start]] = {}
    for s in engine_starts(starts):
        by_context.setdefault(s.context or "(no context)", []).append(s)
    rows = sorted(by_context.items(), key=lambda kv: -sum(s.ready_s or 0 for s in kv[1]))
    lines = []
    for context, group in rows:
        engines = ", ".join(f"{sum(s.engine == e for s in group)} {e}" for e in ENGINES
                            if any(s.engine == e for s in group))
        loading = sum(s.ready_s or 0.0 for s in group)
        lines.append(f"{len(group):3d} starts {loading:7.0f} s  {context}  ({engines})")
    total = engine_starts(starts)
    lines.append(f"{len(total):3d} starts {sum(s.ready_s or 0.0 for s in total):7.0f} s  "
                 "total engine servers")
    return lines


def main(argv: Sequence[str]) -> int:
    """``python -m pytest_rocm_llm.serving.start_ledger LEDGER``: print its account."""
    if len(argv) != 1:
        print("usage: python -m pytest_rocm_llm.serving.start_ledger LEDGER_FILE")
        return 2
    for line in account(read(Path(argv[0]))):
        print(line)
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
