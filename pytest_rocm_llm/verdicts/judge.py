"""From a check and what its run produced to a decision: preconditions, floor, baseline.

No pytest in here: the plugin's ``llm_judge`` fixture turns a decision into a test outcome.
Failure messages lead with their category (verdicts/status.py's ``Category``; the Allure
report sorts on it): precondition not met, performance regression, accuracy regression,
parity divergence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_rocm_llm.config import metric_facts
from pytest_rocm_llm.config.checks import Check
from pytest_rocm_llm.correctness.result import EvalResult
from pytest_rocm_llm.errors import VerdictFailure
from pytest_rocm_llm.serving.engines import flags_to_argv
from pytest_rocm_llm.standard_error import sample_sd
from pytest_rocm_llm.verdicts.baselines import BaselineCache, BaselineEntry
from pytest_rocm_llm.verdicts.checks import (
    FloorMissed,
    PreconditionNotMet,
    measure,
    measure_ratio,
    preconditions,
)
from pytest_rocm_llm.verdicts.gate import (
    BETWEEN_RUNS,
    Measurement,
    between_runs,
    binomial,
)
from pytest_rocm_llm.verdicts.status import Category, Status
from pytest_rocm_llm.verdicts.verdict import CheckSpec, Decision, Mode, Verdict, decide

if TYPE_CHECKING:
    from pytest_rocm_llm.config.suite_model import Suite
    from pytest_rocm_llm.config.targets import Target
    from pytest_rocm_llm.performance.workloads import WorkloadResult
    from pytest_rocm_llm.serving.server import LLMServer


class BaselineGateFailed(VerdictFailure):
    """Cleared the absolute floor but fell behind the stored baseline beyond its noise."""


class BaselineRecorded(VerdictFailure):
    """A baseline was written (missing, or --llm-update-baselines): review it, run again."""


@dataclass(frozen=True)
class Outcome:
    decision: Decision
    error: AssertionError | None


_RAISE = {"floor": FloorMissed, "gate": BaselineGateFailed, "baseline": BaselineRecorded}


def conclude(spec: CheckSpec, m: Measurement | None, problems: Sequence[str], base: Verdict,
             baselines: BaselineCache, mode: Mode, provenance: Mapping[str, Any],
             kind: str | None = None, notes: Sequence[str] = ()) -> Outcome:
    """The shared tail of every check: a broken precondition is never judged."""
    if problems or m is None:
        what = base.workload or "its evaluation"
        msg = (f"{Category.PRECONDITION.lead}{spec.name}: {what} did not do what the check "
               f"assumes, so {spec.metric} is not judged:\n  - " + "\n  - ".join(
                   problems or [f"the run produced no {spec.metric}"]))
        v = dataclasses.replace(base, status=Status.PRECONDITION, message=msg, references=())
        return Outcome(Decision(v, None, msg), PreconditionNotMet(msg))
    path, bfile = baselines.get(base.target, base.suite)
    entry = bfile.entries.get(spec.name) if bfile else None
    rows = bfile.reference_rows if bfile else ()
    pending = bfile.pending.get(spec.name) if bfile else None
    d = decide(spec, m, base, entry, mode, provenance, str(path), rows, notes, pending)
    if d.failure is None:
        return Outcome(d, None)
    exc_type = _RAISE[d.cause or "floor"]
    lead = "" if exc_type is BaselineRecorded else Category.of_check(base.feature, kind).lead
    return Outcome(d, exc_type(lead + d.failure))


def spec_of(check: Check, metric_unit: str | None = None,
            floor_min: float | None = None) -> CheckSpec:
    return CheckSpec(check.name, check.metric, metric_unit if metric_unit is not None
                     else check.unit, check.min if floor_min is None else floor_min,
                     check.max, check.source, check.gate)


def base_verdict(check: Check, suite: Suite, target: Target, profile: str, feature: str,
                 nodeid: str, workload: str | None, artifacts: Mapping[str, str],
                 server: LLMServer | None = None,
                 provenance: Mapping[str, Any] | None = None) -> Verdict:
    engine = f"{server.engine} {server.engine_version}" if server is not None else ""
    return Verdict(suite=suite.name, target=target.name, profile=profile, check=check.name,
                   feature=feature, metric=check.metric, unit=check.unit, status=Status.PASS,
                   workload=workload, engine=engine, model=suite.model_for(target).id,
                   nodeid=nodeid, artifacts=dict(artifacts),
                   build=server.build if server is not None else "",
                   image=str((provenance or {}).get("container_image") or ""),
                   image_id=str((provenance or {}).get("container_image_id") or ""),
                   image_digests=str((provenance or {}).get("container_image_digests") or ""))


def unjudged_verdict(check: Check, suite: Suite, target: Target, nodeid: str,
                     reason: str) -> Verdict:
    """The row of a check whose test stopped before its value existed (skipped, or failed
    with no verdict of its own): declared checks are never silently absent."""
    feature = "correctness" if check.eval is not None else "performance"
    base = base_verdict(check, suite, target, suite.check_profile(check, target), feature,
                        nodeid, check.workload, {})
    return dataclasses.replace(base, status=Status.NOT_JUDGED, message=reason, references=())


def profile_argv(suite: Suite, target: Target, profile: str) -> list[str]:
    """The profile's engine flags as launched (no host, port or model path: those vary)."""
    return flags_to_argv(suite.profile_for(profile, target).flags)


def judge_workload(check: Check, result: WorkloadResult, suite: Suite, target: Target,
                   server: LLMServer, baselines: BaselineCache, mode: Mode,
                   provenance: Mapping[str, Any], nodeid: str,
                   artifacts: Mapping[str, str],
                   reference: WorkloadResult | None = None) -> Outcome:
    """``reference`` is the run of ``check.relative_to``: the value is then the ratio of the
    two runs' metric, judged only when both runs did what they declared."""
    if check.relative_to is None:
        # here, not at module level: the figure notes need numpy, which loading the plugin
        # must not import
        from pytest_rocm_llm.verdicts.figures import figure_notes

        base = base_verdict(check, suite, target, server.profile, "performance", nodeid,
                            check.workload, artifacts, server, provenance)
        problems = preconditions(result)
        m = None
        if not problems and result.metrics.get(check.metric) is not None:
            m = workload_measurement(check, result)
        return with_figure_notes(conclude(spec_of(check), m, problems, base, baselines, mode,
                                          provenance), figure_notes(check, result))
    both = f"{check.workload} (relative to {check.relative_to})"
    base = base_verdict(check, suite, target, server.profile, "performance", nodeid, both,
                        artifacts, server, provenance)
    runs = {check.workload: result, check.relative_to: reference}
    # Each broken precondition names its workload: either run's numbers are not a speed.
    problems = [f"{name}: {p}" for name, r in runs.items()
                for p in (preconditions(r) if r is not None else ["it did not run"])]
    values = {name: r.metrics.get(check.metric) for name, r in runs.items() if r is not None}
    problems += [f"{name}: the run produced no {check.metric}" for name, v in values.items()
                 if not problems and not v]  # a zero reference speed has no ratio either
    m = None if problems or reference is None else ratio_measurement(check, result, reference)
    outcome = conclude(spec_of(check), m, problems, base, baselines, mode, provenance)
    if outcome.error is None or outcome.decision.cause not in ("floor", "gate"):
        return outcome
    unit = f" {u}" if (u := metric_facts.unit(check.metric)) else ""
    shown = "; ".join(f"{name}: {check.metric} = {v:.4g}{unit}" for name, v in values.items())
    return Outcome(outcome.decision, type(outcome.error)(f"{outcome.error}\n  {shown}"))


def with_figure_notes(outcome: Outcome, notes: Sequence[str]) -> Outcome:
    """A throughput verdict with what its figure is made of (mean output tokens, window,
    rate x tokens), in its row and, when it failed, in its message."""
    if not notes:
        return outcome
    d = outcome.decision
    decision = dataclasses.replace(
        d, verdict=dataclasses.replace(d.verdict, notes=(*d.verdict.notes, *notes)))
    if outcome.error is None:
        return Outcome(decision, None)
    return Outcome(decision, type(outcome.error)(f"{outcome.error}\n  " + "\n  ".join(notes)))


def trial_values(check: Check, result: WorkloadResult) -> list[float]:
    """The metric of each trial; empty unless every trial produced it."""
    values = [float(v) for t in result.trials if (v := t.get(check.metric)) is not None]
    return values if len(values) == len(result.trials) else []


def workload_measurement(check: Check, result: WorkloadResult) -> Measurement:
    """The check's value with the noise the gate may use: a share of requests is binomial;
    a workload run as trials gives the spread between them (between_runs); a single run's
    spread is within that run (reported against a baseline, never gated by it)."""
    if check.metric == "success_ratio":
        return binomial(float(result.metrics[check.metric] or 0.0), len(result.records))
    values = trial_values(check, result)
    if len(values) >= 2:
        return between_runs(values, sum(1 for r in result.records if r.ok))
    return measure(check, result)


def ratio_measurement(check: Check, result: WorkloadResult, reference: WorkloadResult
                      ) -> Measurement:
    """A relative check's ratio; with trials on both sides, the between-run SD of the ratio
    by the delta method (relative SDs add in quadrature), over the fewer trials."""
    m = measure_ratio(check, result, reference)
    a, b = trial_values(check, result), trial_values(check, reference)
    if len(a) < 2 or len(b) < 2:
        return Measurement(m.value, m.n, m.spread)  # within-run: reported only
    sa, sb = sample_sd(a) or 0.0, sample_sd(b) or 0.0
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    sd = abs(m.value) * (((sa / ma) ** 2 + (sb / mb) ** 2) ** 0.5) if ma and mb else None
    return Measurement(m.value, m.n, sd, BETWEEN_RUNS, min(len(a), len(b)))


def eval_measurement(check: Check, result: EvalResult) -> Measurement:
    value = float(result.metrics[check.metric])
    n = int(result.metrics.get("n") or result.metrics.get("prompts") or len(result.records) or 1)
    if check.metric == "accuracy_min":  # a share of one length's items, not of all lengths'
        per_length: dict[Any, int] = {}
        for r in result.records:
            if r.get("ok", True) and "length" in r:
                per_length[r["length"]] = per_length.get(r["length"], 0) + 1
        n = min(per_length.values(), default=n)
    if metric_facts.is_proportion(check.metric):
        return binomial(value, n)
    return Measurement(value, n, None)  # no known run-to-run noise: reported only


def eval_spec(check: Check, m: Measurement | None, entry: BaselineEntry | None = None
              ) -> tuple[CheckSpec, tuple[str, ...]]:
    """The accuracy floor from the items actually scored, and notes for the verdict row.

    With a measured known-good run of this harness stored (``entry``), that run is the
    reference: the two-proportion baseline gate decides and the published score is shown
    beside it, not asserted. Otherwise the floor around the published score counts the
    published score's own sampling error when its item count is stored (a published
    baseline entry's n), so a build as good as the published run fails at alpha."""
    if check.reference_score is None or m is None:
        return spec_of(check), ()
    from pytest_rocm_llm.verdicts.accuracy_floor import published_floor

    kind = entry.provenance.get("kind") if entry is not None else None
    ref = check.reference_score
    n_pub = entry.measurement.n if kind == "published" and entry is not None \
        and entry.measurement.n > 1 else None
    floor = published_floor(ref, m.n, check.alpha, check.allowance, n_pub)
    allowance = f", minus allowance {check.allowance:g}" if check.allowance else ""
    if kind == "measured" and check.gate is not None:
        note = (f"published {ref:g}: reference, not asserted (a measured run of this harness "
                f"is the baseline); its floor would be {floor.value:.4f} ({floor.how}"
                f"{allowance})")
        source = f"{check.source}; gated on the measured baseline (two-proportion)"
        return CheckSpec(check.name, check.metric, check.unit, None, check.max, source,
                         check.gate, higher_is_better=True), (note,)
    return CheckSpec(check.name, check.metric, check.unit, floor.value, check.max,
                     f"{check.source}; {floor.how}{allowance}", check.gate), ()


def judge_eval(check: Check, result: EvalResult, suite: Suite, target: Target,
               server: LLMServer, baselines: BaselineCache, mode: Mode,
               provenance: Mapping[str, Any], nodeid: str,
               artifacts: Mapping[str, str]) -> Outcome:
    base = base_verdict(check, suite, target, server.profile, "correctness", nodeid, None,
                        artifacts, server, provenance)
    problems = list(result.problems)
    m = None
    if not problems and result.metrics.get(check.metric) is not None:
        m = eval_measurement(check, result)
    _, bfile = baselines.get(target.name, suite.name)
    spec, notes = eval_spec(check, m, bfile.entries.get(check.name) if bfile else None)
    from pytest_rocm_llm.correctness.accuracy.config import paired_only_reason

    config = suite.eval_for(check.eval or "", target)
    paired_only = paired_only_reason(config)
    if getattr(config, "user_base_url", None):
        # the declared simulator is part of what the score means: named beside it
        notes = (*notes, f"user simulator: {config.user_model or '?'} at "
                         f"{config.user_base_url}, temperature {config.temperature:g}")
    if paired_only is not None:
        # reported, not gated: neither the published floor nor a stored baseline applies
        spec = CheckSpec(check.name, check.metric, check.unit, None, None,
                         f"{check.source}; paired-only", None, higher_is_better=True)
        notes = (*notes, f"paired-only: {paired_only}")
    outcome = conclude(spec, m, problems, base, baselines, mode, provenance, result.kind,
                       notes)
    if outcome.error is not None and result.details and outcome.decision.cause != "baseline":
        # What diverged or degenerated, in words, under the verdict.
        shown = list(result.details[:10])
        more = len(result.details) - len(shown)
        text = f"{outcome.error}\n  " + "\n  ".join(shown) + (
            f"\n  ... and {more} more" if more > 0 else "")
        return Outcome(outcome.decision, type(outcome.error)(text))
    return outcome
