"""A check's verdict: the absolute floor from suite.toml and the baseline gate, both.

No pytest in here. ``decide`` returns the verdict row (what the summary table, the results
file and the report show), the baseline entry to write (if any) and the failure message
(None when the check passes).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from pytest_rocm_llm.config.checks import Gate, gate_kind_for
from pytest_rocm_llm.serving.kernel_paths import kernel_path_note
from pytest_rocm_llm.verdicts.baselines import BaselineEntry
from pytest_rocm_llm.verdicts.gate import GateResult, Measurement, judge
from pytest_rocm_llm.verdicts.status import Status

if TYPE_CHECKING:
    from pytest_rocm_llm.config.targets import Target

Mode = Literal["check", "update", "regen"]


@dataclass(frozen=True)
class Verdict:
    suite: str
    target: str
    profile: str
    check: str
    feature: str  # performance | correctness
    metric: str
    unit: str
    status: Status
    measured: float | None = None
    n: int | None = None
    spread: float | None = None
    spread_kind: str | None = None  # between_runs | binomial | stderr (within one run) | iqr
    runs: int | None = None  # trials the measured value is the mean of
    floor: str = ""  # e.g. ">= 213 tok/s"
    floor_source: str = ""
    baseline: float | None = None
    baseline_kind: str | None = None  # measured | published
    gate: str = ""
    # The baseline gate's honesty: gated False means compared and reported only (no
    # run-to-run noise known), so no false-fail rate is claimed; alpha is set only when gated.
    gated: bool | None = None  # None: no baseline to compare with
    alpha: float | None = None
    alpha_scope: str | None = None  # session | sessions: where alpha holds (verdicts/gate.py)
    mde_pct: float | None = None  # smallest regression caught at 90% power, % of baseline
    delta_pct: float | None = None
    message: str = ""
    references: tuple[str, ...] = ()  # other hardware, as ratios; never gated
    workload: str | None = None
    engine: str = ""  # e.g. "sglang 0.5.23"
    model: str = ""
    # The build whose server measured the value (baseline | candidate; "" when nothing was
    # measured) and the image it ran from, so a paired run's rows say which build they are.
    build: str = ""
    image: str = ""
    image_id: str = ""  # the runtime's id of that image: a tag can move, the id cannot
    image_digests: str = ""
    nodeid: str = ""
    artifacts: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # evidence beside the verdict (a kernel path changed); never gated

    def __post_init__(self) -> None:
        # Rows built from text (a results file read back, a ``**to_json()`` copy) get the
        # member, so every output reads its word from one place.
        object.__setattr__(self, "status", Status(self.status))

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value  # plain text: execnet and json carry no enums
        d["references"] = list(self.references)
        d["artifacts"] = dict(self.artifacts)
        d["notes"] = list(self.notes)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Verdict:
        d = dict(d)
        d["references"] = tuple(d.get("references", ()))
        d["notes"] = tuple(d.get("notes", ()))
        return cls(**d)


@dataclass(frozen=True)
class CheckSpec:
    """What ``decide`` needs to know of a check (perf and correctness alike)."""

    name: str
    metric: str
    unit: str
    min: float | None
    max: float | None
    source: str
    gate: Gate | None  # None: no baseline gate for this check
    # Set when neither bound says it (an accuracy judged on its baseline gate alone).
    higher_is_better: bool | None = None

    @property
    def direction(self) -> str:
        if self.higher_is_better is not None:
            return "higher" if self.higher_is_better else "lower"
        return "higher" if self.min is not None else "lower"


def flags_digest(argv: Sequence[str]) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(list(argv)).encode()).hexdigest()[:16]


def _fmt(v: float, unit: str) -> str:
    return f"{v:.4g}{' ' + unit if unit else ''}"


def floor_text(spec: CheckSpec) -> str:
    parts = []
    if spec.min is not None:
        parts.append(f">= {_fmt(spec.min, spec.unit)}")
    if spec.max is not None:
        parts.append(f"<= {_fmt(spec.max, spec.unit)}")
    return " and ".join(parts)


def floor_miss(spec: CheckSpec, value: float) -> str | None:
    u = f" {spec.unit}" if spec.unit else ""
    if spec.min is not None and value < spec.min:
        short = (spec.min - value) / spec.min * 100 if spec.min else float("inf")
        return (f"{spec.name}: {spec.metric} = {value:.4g}{u}, floor >= {spec.min:g}{u} "
                f"({spec.source}): short by {short:.1f}%")
    if spec.max is not None and value > spec.max:
        over = (value - spec.max) / spec.max * 100 if spec.max else float("inf")
        return (f"{spec.name}: {spec.metric} = {value:.4g}{u}, ceiling <= {spec.max:g}{u} "
                f"({spec.source}): over by {over:.1f}%")
    return None


def baseline_entry(spec: CheckSpec, m: Measurement, profile: str,
                   provenance: Mapping[str, Any]) -> dict[str, Any]:
    gate = spec.gate or Gate(gate_kind_for(spec.direction))  # type: ignore[arg-type]
    return {
        "metric": spec.metric, "unit": spec.unit, "direction": spec.direction,
        "value": m.value, "n": max(m.n, 1), "spread": m.spread, "spread_kind": m.spread_kind,
        "runs": max(m.runs, 1), "profile": profile,
        **({"spread_scope": m.scope or "session"} if m.spread_kind == "between_runs" else {}),
        "gate": {"kind": gate.kind, "alpha": gate.alpha, "tolerance": gate.tolerance},
        "provenance": dict(provenance),
    }


def references(spec: CheckSpec, value: float, rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    out = []
    for row in rows:
        if row.get("check") == spec.name and row.get("value"):
            cond = f", {row['conditions']}" if row.get("conditions") else ""
            out.append(f"{row['hardware']}: {_fmt(row['value'], row.get('unit', ''))}{cond} "
                       f"-> ratio {value / row['value']:.2f} ({row['source']})")
    return tuple(out)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    write: dict[str, Any] | None  # baseline entry to store, if any
    failure: str | None
    cause: str | None = None  # floor | gate | baseline (recorded/updated)


def decide(spec: CheckSpec, m: Measurement, base: Verdict, entry: BaselineEntry | None,
           mode: Mode, provenance: Mapping[str, Any], baseline_file: str,
           reference_rows: Sequence[Mapping[str, Any]] = (),
           notes: Sequence[str] = (), pending: str | None = None) -> Decision:
    """Floor first, then the baseline gate (or the update flow). ``pending``: the stored
    reason a gated check has no value yet ("none until measured"); a check run then reports
    its value beside the floor, not gated, and records nothing unless asked to."""
    miss = floor_miss(spec, m.value)
    common: dict[str, Any] = dict(
        measured=m.value, n=m.n, spread=m.spread, spread_kind=m.spread_kind, runs=m.runs,
        floor=floor_text(spec), floor_source=spec.source,
        references=references(spec, m.value, reference_rows))
    notes = tuple(notes)
    if entry is not None:
        note = kernel_path_note(entry.provenance, provenance)
        notes = (*notes, note) if note else notes
        common.update(baseline=entry.measurement.value,
                      baseline_kind=entry.provenance.get("kind"))
    write = None
    gate_result: GateResult | None = None
    if spec.gate is not None:
        if mode != "check" or (entry is None and pending is None):
            write = baseline_entry(spec, m, base.profile, provenance)
        if entry is not None:
            # The suite's gate is the reviewed policy; the entry records the one in force
            # when it was measured.
            gate_result = judge(entry.measurement, m, spec.gate)
            common.update(gate=gate_result.describe(spec.unit), delta_pct=gate_result.delta_pct,
                          gated=gate_result.gated, alpha=gate_result.alpha,
                          alpha_scope=gate_result.alpha_scope, mde_pct=gate_result.mde_pct)
            if not gate_result.gated:
                notes = (*notes, f"baseline {gate_result.describe()}")
    common["notes"] = notes

    def out(status: Status, failure: str | None, cause: str | None = None) -> Decision:
        v = replace(base, **common, status=status, message=failure or "")
        return Decision(v, write, failure, cause if failure else None)

    if miss is not None:
        return out(Status.FAIL, miss, "floor")
    if spec.gate is None:
        return out(Status.PASS, None)
    if entry is None and pending is not None and mode == "check":
        common.update(gated=False, gate="none until measured")
        common["notes"] = (*notes, f"baseline: none until measured ({pending}); reported, "
                           "not gated; --llm-update-baselines records a measured run")
        return out(Status.PASS, None)
    if entry is None:
        if mode == "regen":
            return out(Status.NEW, None)
        return out(Status.NEW, f"{spec.name}: no baseline yet; recorded "
                   f"{_fmt(m.value, spec.unit)} in {baseline_file}. Review it, commit it, "
                   "and run again", "baseline")
    if mode == "regen":
        return out(Status.UPDATED, None)
    if mode == "update":
        return out(Status.UPDATED, f"{spec.name}: baseline updated "
                   f"{entry.measurement.value:.4g} -> {_fmt(m.value, spec.unit)} in "
                   f"{baseline_file} (--llm-update-baselines fails the updated checks; "
                   "review the diff and run without it)", "baseline")
    assert gate_result is not None
    if not gate_result.passed:
        kind = entry.provenance.get("kind", "measured")
        return out(Status.FAIL, f"{spec.name}: {spec.metric} = {_fmt(m.value, spec.unit)} vs "
                           f"{kind} baseline {_fmt(entry.measurement.value, spec.unit)} "
                           f"({gate_result.delta_pct or 0:+.1f}%): gate "
                           f"{gate_result.describe(spec.unit)} not met", "gate")
    return out(Status.PASS, None)


def unjudged_failure(target: Target, verdicts: Sequence[Verdict], allow: bool) -> str | None:
    """Why a GPU run with checks that were never judged fails (None when it does not): a
    gate that skipped its checks has not vouched for the build. The CPU reference only
    reports them (its data and tools are optional on a developer machine)."""
    unjudged = [v for v in verdicts if v.status == Status.NOT_JUDGED]
    if not unjudged or allow or not target.is_gpu:
        return None
    lines = [f"  {v.suite}/{v.check}: {v.message.splitlines()[0] if v.message else '?'}"
             for v in unjudged]
    return (f"{len(unjudged)} declared check(s) not judged on target {target.name}, so this "
            "run does not pass the gate:\n" + "\n".join(lines) + "\nFix what stopped them, "
            "or pass --llm-allow-unjudged (ini llm_allow_unjudged) to accept a partial run")
