"""What a run measured and decided, gathered where it is written: in the controller.

Under pytest-xdist a worker never writes a baseline: it queues the entries and hands them
to the controller through ``workeroutput`` when it finishes (as pytest-regressions and
syrupy do); verdict rows travel in each report's ``user_properties``. Without xdist the
same object does both jobs in one process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_rocm_llm.phases import PhaseLog
from pytest_rocm_llm.verdicts.baselines import Change, apply_updates
from pytest_rocm_llm.verdicts.paired import PairedVerdict
from pytest_rocm_llm.verdicts.verdict import Verdict

WORKEROUTPUT_KEY = "rocm_llm_baseline_writes"
VERDICT_PROPERTY = "rocm_llm_verdict"
PAIRED_PROPERTY = "rocm_llm_paired"  # a paired run's verdict on a check (verdicts/paired.py)
BUILDS_PROPERTY = "rocm_llm_builds"  # a paired run's two builds: versions, /server_info diff


def paired_from_json(data: Mapping[str, Any]) -> PairedVerdict:
    """The inverse of ``PairedVerdict.to_json`` (JSON's nulls back to NaN)."""
    d = dict(data)
    for key in ("incumbent", "candidate", "delta", "ci_low", "ci_high"):
        if d.get(key) is None:
            d[key] = float("nan")
    d["pairs"] = tuple(d.get("pairs", ()))
    return PairedVerdict(**d)


@dataclass
class RunCollector:
    verdicts: list[Verdict] = field(default_factory=list)
    # (file, suite, target) -> check -> entry
    writes: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    write_errors: list[str] = field(default_factory=list)
    phases: PhaseLog = field(default_factory=PhaseLog)
    paired: list[PairedVerdict] = field(default_factory=list)
    # per suite/profile: each build's versions and what /server_info says changed
    builds: dict[str, dict[str, Any]] = field(default_factory=dict)

    def queue(self, file: Path, suite: str, target: str, check: str,
              entry: Mapping[str, Any]) -> None:
        self.writes.setdefault((str(file), suite, target), {})[check] = dict(entry)

    def to_workeroutput(self) -> str:
        return json.dumps({"writes": [[list(k), v] for k, v in self.writes.items()],
                           "phases": self.phases.to_json()})

    def merge_workeroutput(self, text: str) -> None:
        data = json.loads(text)
        for (file, suite, target), entries in data["writes"]:
            for check, entry in entries.items():
                self.queue(Path(file), suite, target, check, entry)
        self.phases.extend_json(data["phases"])

    def flush(self) -> list[Change]:
        """Write every queued baseline file once, atomically; keeps going past a bad file."""
        for (file, suite, target), entries in sorted(self.writes.items()):
            try:
                self.changes += apply_updates(Path(file), suite, target, entries)
            except Exception as exc:  # a broken file stays as it was; say so, write the rest
                self.write_errors.append(f"{file}: not written: {exc}")
        self.writes.clear()
        return self.changes

