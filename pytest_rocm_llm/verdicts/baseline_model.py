"""The baseline file (``baselines/<target>/<suite>.json``) as pydantic models.

Replaces the JSON Schema check (``data/baseline.schema.json`` + jsonschema) with the same
library that reads suite.toml: one way to validate user files, errors located by key path.
``validate`` raises the ``ConfigError`` the baseline code has always raised: "<file>:
baseline field <dotted.path>: <problem>. Fix the file ... it is not overwritten while broken".
``json_schema()`` still gives editors a JSON Schema, generated from the models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from pytest_rocm_llm.errors import ConfigError

SCHEMA_VERSION = 1


class _Strict(BaseModel):
    # JSON's own types (no "8" -> 8), no unknown fields, no NaN or infinity (a baseline of
    # NaN can gate nothing; Python's json module would otherwise accept it).
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


class GateSpec(_Strict):
    kind: Literal["floor", "ceiling", "band"]
    alpha: float = Field(0.01, gt=0, lt=0.5)
    tolerance: float = Field(0.0, ge=0, le=10)


class KernelPaths(_Strict):
    """What the server's log showed it ran (kernel_paths.py)."""

    attention_prefill_backend: str | None = None
    attention_decode_backend: str | None = None
    moe_runner_backend: str | None = None
    moe_kernels: list[str] = Field(default_factory=list)
    all_reduce: str | None = None
    tuned_config_hits: int = Field(0, ge=0)
    tuned_config_misses: int = Field(0, ge=0)


class Provenance(_Strict):
    kind: Literal["measured", "published"]
    date: str = Field(min_length=4)
    source: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    engine_flags_digest: str | None = None
    model: str | None = None
    rocm_version: str | None = None
    driver_version: str | None = None
    aiter_version: str | None = None
    container_image: str | None = None
    container_image_id: str | None = None  # the runtime's image id (sha256:...)
    container_image_digests: str | None = None  # registry digests, comma-separated
    host: str | None = None
    suite_commit: str | None = None
    kernel_paths: KernelPaths | None = None
    # variable -> {path: sha256, or null when the file was missing}: the tuned kernel tables
    # the server inherited by path (serving/tuned_tables.py)
    tuned_tables: dict[str, dict[str, str | None]] | None = None


class Entry(_Strict):
    """One check's stored value with its noise, gate and provenance."""

    metric: str = Field(min_length=1)
    unit: str
    direction: Literal["higher", "lower"]
    value: float
    n: int = Field(ge=1)
    spread: float | None = Field(ge=0)
    # between_runs: the sample SD of one run's value across ``runs`` repeated runs (the only
    # spread a performance gate uses); binomial: a proportion's standard error over n items;
    # stderr, iqr: within one run (reported, never gated).
    spread_kind: Literal["stderr", "iqr", "binomial", "between_runs"] | None = None
    runs: int | None = Field(None, ge=1)
    # between_runs: where the runs came from. "session": trials back to back on one server
    # (what a workload records; the gate's alpha then holds within a session only);
    # "sessions": runs gathered across server sessions / days (alpha holds across them).
    # Absent in files written before it existed: read as "session". Optional, so schema 1
    # stays as it was and every existing file loads.
    spread_scope: Literal["session", "sessions"] | None = None
    profile: str | None = None
    gate: GateSpec
    provenance: Provenance

    @model_validator(mode="after")
    def _runs_with_between_run_spread(self) -> Entry:
        # A between-run spread without its count cannot be weighed.
        if self.spread_kind == "between_runs" and self.runs is None:
            raise PydanticCustomError("required_property", "'runs' is a required property")
        return self


class ReferenceRow(_Strict):
    """A figure from other hardware, shown as a ratio in the report and never gated."""

    hardware: str = Field(min_length=1)
    check: str = Field(min_length=1)
    value: float
    unit: str
    conditions: str | None = None
    source: str = Field(min_length=1)
    date: str | None = None


class Pending(_Strict):
    """A gated check with no value to compare with yet, on purpose: reported, not gated,
    until a measured run is recorded (--llm-update-baselines), so an unchanged build's
    first run is not red by construction. ``reason`` says why no figure exists."""

    reason: str = Field(min_length=1)
    date: str | None = None


class BaselineDocument(_Strict):
    schema_version: Literal[1]
    suite: str = Field(min_length=1)
    target: str = Field(min_length=1)
    metrics: dict[str, Entry]  # keyed by the check's name
    # Checks stored as "none until measured" (optional, so schema 1 files load unchanged).
    pending: dict[str, Pending] = Field(default_factory=dict)
    reference_rows: list[ReferenceRow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _pending_or_measured(self) -> BaselineDocument:
        both = sorted(set(self.pending) & set(self.metrics))
        if both:
            raise PydanticCustomError(
                "pending_and_measured", "{checks} stored both as a value (metrics) and as "
                "none until measured (pending): delete the pending entry",
                {"checks": ", ".join(both)})
        return self


def json_schema() -> dict[str, Any]:
    """A JSON Schema of the file, for editors (generated; the models are the definition)."""
    return BaselineDocument.model_json_schema()


def _where_and_what(err: Any) -> tuple[str, str]:
    """jsonschema's way of locating a problem, which users of these files already read: a
    missing or unexpected key is a problem of the object that holds it."""
    loc = [str(p) for p in err["loc"]]
    if err["type"] == "missing":
        return ".".join(loc[:-1]) or "(top level)", f"{loc[-1]!r} is a required property"
    if err["type"] == "extra_forbidden":
        return (".".join(loc[:-1]) or "(top level)",
                f"Additional properties are not allowed ({loc[-1]!r} was unexpected)")
    return ".".join(loc) or "(top level)", str(err["msg"])


def validate(path: Path, data: Any) -> BaselineDocument:
    """``data`` (parsed JSON of ``path``) as a baseline document, or a ConfigError naming the
    file and the field."""
    try:
        return BaselineDocument.model_validate(data)
    except ValidationError as exc:
        errors = sorted(exc.errors(include_url=False), key=lambda e: [str(p) for p in e["loc"]])
        where, what = _where_and_what(errors[0])
        raise ConfigError(
            f"{path}: baseline field {where}: {what}. Fix the file (format: "
            f"pytest_rocm_llm/verdicts/baseline_model.py) or restore it from version control; "
            f"it is not overwritten while broken") from None
