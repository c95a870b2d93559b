"""Stored baselines: ``<baselines dir>/<target>/<suite>.json``, validated and written atomically.

A file that does not match the schema is a ``ConfigError`` naming the file and the
field; it is never silently replaced. Writes go to a temporary file in the same directory
that is fsynced and renamed over the old one, so a crash leaves the old file or the new
one, never half of either.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_rocm_llm.config.checks import Gate
from pytest_rocm_llm.config.metric_facts import is_proportion
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.verdicts.gate import BINOMIAL, Measurement, binomial

SCHEMA_VERSION = 1


def schema() -> dict[str, Any]:
    """A JSON Schema of the file for editors, generated from the pydantic models."""
    from pytest_rocm_llm.verdicts.baseline_model import json_schema

    return json_schema()


@dataclass(frozen=True)
class BaselineEntry:
    check: str
    data: Mapping[str, Any]  # as stored (validated)

    @property
    def measurement(self) -> Measurement:
        """The stored value with its noise. A proportion's noise follows from its n (files
        written before the binomial kind existed say "stderr" for it); a within-run spread
        stays within-run, so the gate reports instead of pretending it is run-to-run noise."""
        d = self.data
        value, n, kind = float(d["value"]), int(d["n"]), d.get("spread_kind", "stderr")
        if kind == BINOMIAL or (kind == "stderr" and is_proportion(d["metric"])):
            return binomial(value, n)
        # Files written before spread_scope existed hold one session's trials: that is how
        # a workload's trials have always been recorded.
        scope = (d.get("spread_scope") or "session") if kind == "between_runs" else None
        return Measurement(value, n, d.get("spread"), kind, int(d.get("runs", 1)), scope)

    @property
    def gate(self) -> Gate:
        g = self.data["gate"]
        return Gate(g["kind"], g.get("alpha", 0.01), g.get("tolerance", 0.0))

    @property
    def provenance(self) -> Mapping[str, Any]:
        provenance: Mapping[str, Any] = self.data["provenance"]
        return provenance


@dataclass(frozen=True)
class BaselineFile:
    path: Path
    suite: str
    target: str
    entries: Mapping[str, BaselineEntry] = field(default_factory=dict)
    # check -> why it has no value yet ("none until measured": reported, not gated)
    pending: Mapping[str, str] = field(default_factory=dict)
    reference_rows: tuple[Mapping[str, Any], ...] = ()


def baseline_path(directory: Path, target: str, suite: str) -> Path:
    return directory / target / f"{suite}.json"


def validate(path: Path, data: Any) -> None:
    from pytest_rocm_llm.verdicts.baseline_model import validate as validate_document

    validate_document(path, data)


def load(path: Path) -> BaselineFile | None:
    """The baseline file at ``path``; None when there is none yet."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read baseline file: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: baseline file is not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}); restore it from version control or delete it to record anew"
        ) from None
    validate(path, data)
    return BaselineFile(
        path=path, suite=data["suite"], target=data["target"],
        entries={k: BaselineEntry(k, v) for k, v in data["metrics"].items()},
        pending={k: v["reason"] for k, v in data.get("pending", {}).items()},
        reference_rows=tuple(data.get("reference_rows", ())),
    )


def write_atomic(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, sort_keys=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # the rename itself survives a power cut
    finally:
        os.close(dir_fd)


@dataclass(frozen=True)
class Change:
    file: Path
    check: str
    old: float | None
    new: float
    unit: str
    old_kind: str | None  # measured | published | None (new)

    def describe(self) -> str:
        u = f" {self.unit}" if self.unit else ""
        if self.old is None:
            return f"{self.file}: {self.check}: new baseline {self.new:.4g}{u}"
        pct = f" ({(self.new - self.old) / abs(self.old) * 100:+.1f}%)" if self.old else ""
        was = f" [was {self.old_kind}]" if self.old_kind == "published" else ""
        return f"{self.file}: {self.check}: {self.old:.4g} -> {self.new:.4g}{u}{pct}{was}"


def apply_updates(path: Path, suite: str, target: str,
                  updates: Mapping[str, Mapping[str, Any]]) -> list[Change]:
    """Merge new entries (check name -> entry) into the file and write it atomically."""
    current = load(path)
    if current is not None:
        data = json.loads(path.read_text())
    else:
        data = {"schema_version": SCHEMA_VERSION, "suite": suite, "target": target,
                "metrics": {}}
    changes = []
    for check, entry in sorted(updates.items()):
        old = data["metrics"].get(check)
        new = dict(entry)
        data["metrics"][check] = new
        data.get("pending", {}).pop(check, None)  # measured now: no longer pending
        changes.append(Change(path, check, old["value"] if old else None, new["value"],
                              new.get("unit", ""),
                              old["provenance"]["kind"] if old else None))
    if "pending" in data and not data["pending"]:
        del data["pending"]
    validate(path, data)  # never write what could not be read back
    write_atomic(path, data)
    return changes


@dataclass
class BaselineCache:
    """Each baseline file read once per process (writes happen only at the end)."""

    directory: Path
    _files: dict[Path, BaselineFile | None] = field(default_factory=dict)

    def get(self, target: str, suite: str) -> tuple[Path, BaselineFile | None]:
        path = baseline_path(self.directory, target, suite)
        if path not in self._files:
            self._files[path] = load(path)  # ConfigError naming file and field when broken
        return path, self._files[path]
