"""Checks declared in suite.toml: what each one reads (a workload's metric or an
evaluation's), its floor or ceiling, where the number comes from, and the baseline gate it
declares. Parsed and validated here against the suite's workloads and evaluations; how a check
is measured and judged is verdicts/checks.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, model_validator

from pytest_rocm_llm.config import metric_facts
from pytest_rocm_llm.config.fields import check
from pytest_rocm_llm.config.toml import Table, TomlTable, override_of, problem, validate
from pytest_rocm_llm.config.workload import WORKLOADS, Workload, metrics_of_workloads

Direction = Literal["higher", "lower"]
GateKind = Literal["floor", "ceiling", "band"]
DEFAULT_ALPHA = 0.01

BASELINE_GATES = ("floor", "ceiling", "band", "none")


@dataclass(frozen=True)
class Gate:
    kind: GateKind
    alpha: float = DEFAULT_ALPHA
    tolerance: float = 0.0  # relative to the baseline value, on top of the noise margin

    @property
    def side_alpha(self) -> float:
        """The false-fail rate each threshold spends. A band fails on either side, so each
        side gets alpha/2 and the row's alpha is the whole false-fail rate (at alpha per
        side an identical build failed a band 2% of the time while the row said 0.01)."""
        return self.alpha / 2 if self.kind == "band" else self.alpha


def gate_kind_for(direction: Direction) -> GateKind:
    return "floor" if direction == "higher" else "ceiling"


@dataclass(frozen=True)
class Check:
    name: str
    workload: str | None  # a performance check reads a workload ...
    metric: str
    min: float | None
    max: float | None
    source: str
    description: str = ""
    # How the value is obtained, as the floor's source obtained it (dataset, prompts,
    # sampling, thinking mode, budget, scoring); "not published" where it is not known.
    method: str = ""
    # The baseline gate: floor/ceiling by direction unless set; "none" gates on floors only.
    baseline: str = ""
    baseline_alpha: float = 0.01
    baseline_tolerance: float = 0.0
    eval: str | None = None  # ... a correctness check reads an evaluation
    # Accuracy floors that respect sample size: the exact one-sided binomial critical value
    # around the reference score at this false-fail rate, minus the allowance.
    reference_score: float | None = None
    alpha: float = 0.01
    allowance: float = 0.0
    # A relative check's value is its metric on ``workload`` over the same metric on this
    # workload (e.g. speculative decoding over no speculation), so its floor is a ratio.
    relative_to: str | None = None

    @property
    def unit(self) -> str:
        return "x" if self.relative_to is not None else metric_facts.unit(self.metric)

    @property
    def feature(self) -> str:
        return "performance" if self.workload else "correctness"

    @property
    def direction(self) -> str:
        return "higher" if self.min is not None or self.reference_score is not None \
            else "lower"

    @property
    def gate(self) -> Gate | None:
        kind = self.baseline or gate_kind_for(self.direction)  # type: ignore[arg-type]
        if kind == "none":
            return None
        return Gate(kind, self.baseline_alpha, self.baseline_tolerance)  # type: ignore[arg-type]


class CheckTable(TomlTable):
    """``[checks.<name>]`` as written in suite.toml. Validated with the suite's workloads and
    evaluations as context (``workloads``, ``evals``), which a check must name."""

    workload: str | None = None
    eval: str | None = None
    metric: str
    min: float | None = None
    max: float | None = None
    source: str = ""
    description: str = ""
    method: str = ""
    baseline: Annotated[str, check(lambda b: b == "" or b in BASELINE_GATES, lambda b: (
        f"{b!r} is not a gate ({', '.join(BASELINE_GATES)})"))] = ""
    baseline_alpha: float = Field(0.01, gt=0, le=0.5)
    baseline_tolerance: float = Field(0.0, ge=0.0, le=10.0)
    reference_score: float | None = Field(None, ge=0.0, le=1.0)
    alpha: float = Field(0.01, gt=0, le=0.5)
    allowance: float = Field(0.0, ge=0.0, le=1.0)
    relative_to: str | None = None

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> CheckTable:
        context = info.context or {}
        _references(self, context.get("workloads", {}), context.get("evals", {}))
        return self


def _references(c: CheckTable, workloads: Mapping[str, Workload],
                evals: Mapping[str, Any]) -> None:
    """What a check names must exist and be able to produce its metric and floor."""
    if (c.workload is None) == (c.eval is None):
        raise problem(None, "a check reads either a workload (workload = ...) or an "
                            "evaluation (eval = ...), one of them")
    if c.workload is not None and c.workload not in workloads:
        raise problem("workload", f"{c.workload!r} is not a workload "
                                  f"({', '.join(workloads) or 'none'})")
    if c.eval is not None and c.eval not in evals:
        raise problem("eval", f"{c.eval!r} is not an evaluation ({', '.join(evals) or 'none'})")
    if c.workload is not None:
        _produced(c.metric, c.workload, workloads[c.workload])
    if c.eval is not None:
        from pytest_rocm_llm.config.evals import EVALS

        kind = EVALS.get(evals[c.eval].kind)
        if not kind.produces(c.metric):
            raise problem("metric", f"{c.metric!r} is not a metric of a {kind.name} evaluation; "
                                    f"metrics: {kind.metrics_text()}")
    if c.relative_to is not None:
        _relative(c.workload, c.relative_to, workloads, c.metric)
    if c.reference_score is not None and c.eval is None:
        raise problem("reference_score", "a binomial floor needs an evaluation (eval = ...)")
    if c.min is None and c.max is None and c.reference_score is None:
        raise problem(None, "a check needs min (a floor), max (a ceiling) or reference_score "
                            "(a binomial floor around a published score)")
    if not c.source:
        raise problem("source", "say where the number comes from (a publication, a "
                                "measurement)")
    if c.workload is not None and c.metric == "saturation_rate":
        _saturation_floor(c.workload, workloads[c.workload], c.min)
    if c.workload is not None and c.metric == "capacity_output_tok_s":
        _capacity_floor(c.workload, workloads[c.workload], c.min)


def _produced(metric: str, name: str, w: Workload) -> None:
    """The workload's kind measures ``metric``."""
    if metric in WORKLOADS.get(w.kind).metrics:
        return
    every = metrics_of_workloads()
    if metric not in every:
        raise problem("metric", f"{metric!r} is not a metric; metrics: {', '.join(every)}")
    by = " or ".join(k.name for k in WORKLOADS if metric in k.metrics)
    raise problem("metric", f"{metric} is measured by a {by} workload; {name!r} is a {w.kind}")


def parse_check(name: str, t: Table, workloads: Mapping[str, Workload],
                base: Check | None = None, evals: Mapping[str, Any] | None = None) -> Check:
    """A check from its table; with ``base``, a per-target override of some fields."""
    table = validate(CheckTable, t, override_of(CheckTable, base, t.data),
                     context={"workloads": workloads, "evals": evals or {}})
    return Check(name=name, **table.model_dump())


def _relative(name: str | None, ref: str, workloads: Mapping[str, Workload],
              metric: str) -> None:
    if name is None:
        raise problem("relative_to", "a relative check compares two workloads' speeds; an "
                                     "evaluation has none (read a workload with workload = ...)")
    if ref not in workloads:
        raise problem("relative_to", f"{ref!r} is not a workload ({', '.join(workloads)})")
    if ref == name:
        raise problem("relative_to", f"{name!r} relative to itself is 1 by definition; name the "
                                     "workload it must beat (e.g. the same sizes without "
                                     "speculation)")
    # Runs of different kinds measure different things (one stream against a loaded
    # server), so their ratio would say nothing about the feature that differs.
    mine, theirs = workloads[name].kind, workloads[ref].kind
    if mine != theirs:
        raise problem("relative_to", f"{ref!r} is a {theirs} workload and {name!r} a {mine} "
                                     f"one; a ratio compares runs of the same kind: name a "
                                     f"{mine} workload")
    if not metric_facts.facts(metric).speed:
        raise problem("metric", f"{metric!r} is not a speed; a relative check (relative_to = "
                                f"...) compares speeds: {', '.join(metric_facts.speeds())}")


def _saturation_floor(name: str, w: Workload, floor: float | None) -> None:
    # A node that cannot hold the first step reads 0 (below every offered rate): against a
    # floor under that step it may still have held the floor, so the verdict would be a guess.
    if floor is not None and w.rates and floor < w.rates[0]:
        raise problem("min", f"a saturation floor of {floor:g} req/s is below the sweep's first "
                             f"rate {w.rates[0]:g} req/s, so a node failing that step cannot be "
                             f"judged against it; start workloads.{name}.rates at or below the "
                             "floor")


def _capacity_floor(name: str, w: Workload, floor: float | None) -> None:
    if floor is None or not w.rates:
        return
    # A step that keeps up offers rate x output tokens and shows about that in steady state
    # (never more): a sweep whose last step offers no more than the floor cannot pass it,
    # whatever the node sustains.
    top, low = w.rates[-1] * w.output_tokens, w.rates[0] * w.output_tokens
    if top <= floor:
        raise problem("min", f"a capacity floor of {floor:g} tok/s is out of reach of the sweep: "
                             f"its last step offers {w.rates[-1]:g} req/s x {w.output_tokens} "
                             f"tokens = {top:g} tok/s; add a rate above "
                             f"{floor / w.output_tokens:.3g} req/s to workloads.{name}.rates")
    # A node that cannot hold the first step reads 0; were that step above the floor, the
    # node might still sustain the floor at a lower rate, so 0 would not be a verdict.
    if low > floor:
        raise problem("min", f"a capacity floor of {floor:g} tok/s is below the sweep's first "
                             f"step ({w.rates[0]:g} req/s x {w.output_tokens} tokens = "
                             f"{low:g} tok/s), so a node failing that step cannot be judged "
                             f"against it; start workloads.{name}.rates at or below "
                             f"{floor / w.output_tokens:.3g} req/s")
