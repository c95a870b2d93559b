"""The fault suite's bookkeeping: each case's outcome, seconds and leaked processes, and the
closing table printed at the end of the run (``pytest tests/faults``).

A leaked process is one that outlives its case and belongs to it: a live member of a server
process group the case saw launched, a process whose command line names one of the case's
server ports, or a process whose working directory is inside the case's pytester directory
(every pytest run, xdist worker and server a case starts inherits that directory).
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_rocm_llm.serving.guardian import group_members

LOADING = re.compile(r"\[rocm-llm\] (\S+): loading server at http://127\.0\.0\.1:(\d+) "
                     r"\(pid (\d+)")


@dataclass
class Row:
    case: str
    outcome: str = "?"
    seconds: float = 0.0
    leaked: int | None = None


ROWS: list[Row] = []
ROW_KEY = pytest.StashKey[Row]()


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[-1].split()[1])
        except (OSError, ValueError):
            break
    return pids


def _live(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class FaultCase:
    """What one case launched, and what of it is still alive."""

    name: str
    directory: Path
    pgids: set[int] = field(default_factory=set)
    ports: set[int] = field(default_factory=set)
    leaked: int | None = None

    def saw(self, output: str) -> list[tuple[str, int, int]]:
        """Register the servers a run's output shows loading; returns (name, port, pgid)."""
        found = [(m[1], int(m[2]), int(m[3])) for m in LOADING.finditer(output)]
        for _, port, pgid in found:
            self.ports.add(port)
            self.pgids.add(pgid)
        return found

    def leftovers(self) -> list[int]:
        mine = _ancestors()
        left = {p for g in self.pgids for p in group_members(g)}
        port_args = [f"--port\0{p}\0".encode() for p in self.ports]
        root = str(self.directory.resolve())
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in mine:
                continue
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes() + b"\0"
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if any(a in cmdline for a in port_args) or cwd == root or cwd.startswith(root + "/"):
                left.add(int(entry))
        return sorted(p for p in left if p not in mine and _live(p))

    def assert_no_leak(self, within_s: float = 30.0) -> None:
        """Wait up to ``within_s`` for everything of this case to be gone; record and assert."""
        deadline = time.monotonic() + within_s
        left = self.leftovers()
        while left and time.monotonic() < deadline:
            time.sleep(0.5)
            left = self.leftovers()
        self.leaked = len(left)
        if left:
            detail = {p: _cmd(p) for p in left}
            for p in left:  # do not let one case's leak poison the next
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            pytest.fail(f"{len(left)} process(es) left behind: {detail}")


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:160]
    except OSError:
        return "?"


@pytest.fixture
def fault(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> Iterator[FaultCase]:
    case = FaultCase(request.node.name, pytester.path)
    row = Row(request.node.name)
    ROWS.append(row)
    request.node.stash[ROW_KEY] = row
    yield case
    if case.leaked is None:  # the case failed before its own check: count what is left
        case.leaked = len(case.leftovers())
    row.leaked = case.leaked


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    row = item.stash.get(ROW_KEY, None)
    if row is not None and report.when == "call":
        row.outcome, row.seconds = report.outcome, report.duration
        if hasattr(report, "wasxfail"):
            row.outcome = "xfail" if report.skipped else "XPASS"
    elif row is not None and report.failed:
        row.outcome = f"error ({report.when})"
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not ROWS:
        return
    terminalreporter.section("fault suite")
    width = max(len(r.case) for r in ROWS)
    terminalreporter.write_line(f"{'case':<{width}}  outcome  seconds  leaked processes")
    for r in ROWS:
        leaked = "-" if r.leaked is None else str(r.leaked)
        terminalreporter.write_line(f"{r.case:<{width}}  {r.outcome:<7}  {r.seconds:7.1f}  "
                                    f"{leaked}")
    total = sum(r.seconds for r in ROWS)
    terminalreporter.write_line(f"{len(ROWS)} cases, {total:.0f} s in cases, "
                                f"{sum(r.leaked or 0 for r in ROWS)} processes leaked")
