"""The pytest glue of a paired run (``--llm-candidate-*``): each workload check runs as trials
of both builds in balanced order, each evaluation on both builds; the check gets a paired
verdict besides the stored-baseline one, and each profile's two builds are described (versions,
what ``/server_info`` says changed).

The stored baseline and the floors judge the candidate's values as a run without a candidate
judges its build (judging.finish); the paired verdict is recorded beside it (a row under
PAIRED_PROPERTY, which travels to the xdist controller with the report) and fails the test
when it is "regressed", or "inconclusive" under ``--llm-inconclusive fail``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from pytest_rocm_llm.config.builds import CANDIDATE, INCUMBENT, Build
from pytest_rocm_llm.errors import VerdictFailure
from pytest_rocm_llm.plugin import allure as allure_report
from pytest_rocm_llm.plugin.state import SUITE_KEY, RunSession, run_session
from pytest_rocm_llm.report.collector import BUILDS_PROPERTY, PAIRED_PROPERTY
from pytest_rocm_llm.verdicts.paired import PairedVerdict
from pytest_rocm_llm.verdicts.sequential import PairedCheck
from pytest_rocm_llm.verdicts.status import PairedStatus

if TYPE_CHECKING:
    from pytest_rocm_llm.config.checks import Check
    from pytest_rocm_llm.correctness.result import EvalResult
    from pytest_rocm_llm.performance.runs import WorkloadRuns
    from pytest_rocm_llm.plugin.check_context import CheckContext
    from pytest_rocm_llm.serving.server import LLMServer
    from pytest_rocm_llm.verdicts.paired_trials import PairedRuns

Servers = Callable[..., "LLMServer"]  # (profile, build) -> the build's server of the profile


class PairedVerdictFailed(VerdictFailure):
    """The candidate is worse than the incumbent (or undecided, under the default)."""


def _remember_info(run: RunSession, server: LLMServer) -> None:
    from pytest_rocm_llm.serving.engines import get_engine

    key = (server.suite, server.profile, server.build)
    if key not in run.server_info and server.process is not None:
        try:
            run.server_info[key] = get_engine(server.engine).server_info(server.base_url)
        except Exception as exc:  # a description, never a verdict: say why it is missing
            run.server_info[key] = {"error": f"{type(exc).__name__}: {exc}"}


def describe_builds(request: pytest.FixtureRequest, ctx: CheckContext, profile: str,
                    servers: dict[str, LLMServer]) -> None:
    """Both builds' versions and /server_info diff of a profile, once per profile."""
    from pytest_rocm_llm.serving.build_diff import diff_server_info, format_diff
    from pytest_rocm_llm.serving.build_versions import build_versions
    from pytest_rocm_llm.serving.container import image_identity
    from pytest_rocm_llm.verdicts.provenance import engine_prefix

    name = f"{ctx.suite.name}/{profile}"
    if name in ctx.collector.builds or set(servers) != {INCUMBENT, CANDIDATE}:
        return
    known = run_session(request.config).server_info
    info = {b: known.get((ctx.suite.name, profile, b), {}) for b in servers}
    images = {b.name: image_identity(ctx.settings.container_runtime or "", b.image)
              for b in ctx.settings.builds if b.image is not None}
    versions = {b: {"engine": f"{s.engine} {s.engine_version}",
                    **build_versions(engine_prefix(s.argv)), **images.get(b, {})}
                for b, s in servers.items()}
    flags = list(ctx.suite.profile_for(profile, ctx.target).flags)
    cand = ctx.settings.candidate
    cand_flags = list(ctx.suite.profile_for(profile, ctx.target, CANDIDATE).flags) + [
        w.lstrip("-") for w in (cand.flags if cand else ()) if w.startswith("--")]
    changes = diff_server_info(info[INCUMBENT], info[CANDIDATE], set_flags_a=flags,
                               set_flags_b=cand_flags)
    entry = {"versions": versions, "server_info_diff": format_diff(changes),
             "candidate": cand.describe() if cand else ""}
    ctx.collector.builds[name] = entry  # this process's copy; the report row travels
    request.node.user_properties.append((BUILDS_PROPERTY, {name: entry}))


def record_paired(request: pytest.FixtureRequest, verdict: PairedVerdict) -> None:
    request.node.user_properties.append((PAIRED_PROPERTY, verdict.to_json()))


def record_outputs(request: pytest.FixtureRequest, ctx: CheckContext, name: str,
                   summary: str) -> None:
    """Greedy outputs compared across builds: reported, never a failure by itself."""
    entry = {f"{ctx.suite.name}/{name}": {"outputs": summary}}
    ctx.collector.builds.update(entry)
    request.node.user_properties.append((BUILDS_PROPERTY, entry))


def paired_attachment(verdict: PairedVerdict) -> allure_report.Attachment:
    return allure_report.Attachment(f"paired verdict ({verdict.check})",
                                    json.dumps(verdict.to_json(), indent=2), "json")


def paired_failure(ctx: CheckContext, verdict: PairedVerdict | None) -> None:
    from pytest_rocm_llm.report.paired_table import paired_failures

    if verdict is not None and paired_failures([verdict], ctx.settings.inconclusive):  # type: ignore[arg-type]
        __tracebackhide__ = True
        how = ("" if verdict.status == PairedStatus.REGRESSED else
               " (pass --llm-inconclusive pass to let an undecided check pass)")
        raise PairedVerdictFailed(f"{verdict.check}: paired verdict {verdict.status.upper()}"
                                  f"{how}: {verdict.detail}")


def run_paired_workload(request: pytest.FixtureRequest, ctx: CheckContext, check: Check,
                        servers: Servers, runs: WorkloadRuns, paired: PairedRuns
                        ) -> tuple[Any, LLMServer, PairedVerdict | None, dict[str, LLMServer]]:
    """The candidate's merged result (for the stored-baseline judge), its server, the paired
    verdict (None when a trial lacks the metric) and the server of each build. The first
    check of a workload runs its trials, block by block until every paired check reading it
    has decided (verdicts/sequential.py); the others read their verdicts."""
    assert check.workload is not None
    w = ctx.suite.workload_for(check.workload, ctx.target)
    profile = w.profile or ctx.suite.default_profile
    builds: dict[str, Build] = {b.name: b for b in ctx.settings.builds}

    run = run_session(request.config)
    used = run.trial_servers.setdefault((ctx.suite.name, w.name), {})

    def run_trial(build: str, one: Any) -> Any:
        server = servers(profile, builds[build])
        _remember_info(run, server)
        used[build] = server
        label = ctx.suite.name if build == INCUMBENT else f"{ctx.suite.name}@{build}"
        return runs.run_trial(f"{label}-seed{one.seed}", one, server)

    pool = run.servers()
    first = pool.serving_build(ctx.suite.name)
    # Only the checks this session runs (-k may deselect some): a deselected check would
    # otherwise keep the workload running to its budget for a verdict nobody reads.
    selected = {check.name} | selected_checks(request.session.items, ctx.suite.name)
    trials = paired.get(ctx.suite.name, w, run_trial, first, paired_checks_of(
        [c for c in ctx.suite.checks_for(ctx.target) if c.name in selected], w.name),
        lambda: pool.stop_profile(ctx.suite.name, profile))
    entry = {f"{ctx.suite.name}/{w.name}": {
        "order": "-".join(trials.order),
        "incumbent_trials": [dict(r.metrics) for r in trials.incumbent],
        "candidate_trials": [dict(r.metrics) for r in trials.candidate]}}
    if next(iter(entry)) not in ctx.collector.builds:  # both builds' values, for --llm-results
        ctx.collector.builds.update(entry)
        request.node.user_properties.append((BUILDS_PROPERTY, entry))
    verdict = trials.verdicts.get(check.name)
    return trials.merged(CANDIDATE), used[CANDIDATE], verdict, dict(used)


def selected_checks(items: list[Any], suite: str) -> set[str]:
    """The checks of ``suite`` this session runs (its items after -k / -m selection)."""
    return {it.callspec.params["llm_check"].name for it in items
            if "llm_check" in getattr(getattr(it, "callspec", None), "params", {})
            and getattr(it.stash.get(SUITE_KEY, None), "name", None) == suite}


def paired_checks_of(checks: list[Check], workload: str) -> list[PairedCheck]:
    """The paired checks a workload's trials decide: every check reading it that is not
    relative to another workload (those run on the incumbent only)."""
    return [PairedCheck(c.name, c.metric, c.unit, c.direction)  # type: ignore[arg-type]
            for c in checks if c.workload == workload and c.relative_to is None]



def _length_of(metric: str, incumbent: EvalResult) -> int | None:
    """Long-context items a metric reads: ``accuracy@L`` those at L; ``accuracy_min`` those
    at the length where the incumbent's accuracy is lowest (what it reports); else all."""
    if metric.startswith("accuracy@"):
        return int(metric.split("@", 1)[1])
    if metric == "accuracy_min":
        per = {int(k.split("@", 1)[1]): v for k, v in incumbent.metrics.items()
               if k.startswith("accuracy@") and v is not None}
        return min(per, key=lambda n: (per[n], n)) if per else None
    return None


def paired_eval(check: Check, incumbent: EvalResult, candidate: EvalResult,
                config: Any = None) -> tuple[PairedVerdict | None, str | None]:
    """Accuracy compared on the same items (McNemar) at the eval's ``paired_margin``, and the
    greedy outputs compared: by token id where the records carry them (the near-tie rule
    needs the incumbent's logprobs), else by response text. Either is None when the records
    allow neither. An inconclusive verdict whose items cannot decide the margin says so and
    does not fail (verdicts/paired_items.py)."""
    from pytest_rocm_llm.verdicts.paired import outputs_changed, paired_accuracy
    from pytest_rocm_llm.verdicts.paired_items import DISCORDANCE, decidability

    length = _length_of(check.metric, incumbent)

    def by_id(result: EvalResult, field: str, at: int | None = None) -> dict[Any, Any]:
        return {r["id"]: r[field] for r in result.records
                if isinstance(r, dict) and "id" in r and r.get(field) is not None
                and (at is None or r.get("length") == at)}

    verdict = None
    a, b = by_id(incumbent, "correct", length), by_id(candidate, "correct", length)
    common = [k for k in a if k in b]
    # Per-item correctness speaks to an accuracy metric only (not, e.g., invalid_rate).
    if common and check.metric.startswith("accuracy"):
        margin = float(getattr(config, "paired_margin", 2.0))
        verdict = paired_accuracy(check.name, check.metric, [bool(a[k]) for k in common],
                                  [bool(b[k]) for k in common], margin_points=margin)
        can = decidability(len(common), margin / 100, verdict.incumbent,
                           float(getattr(config, "paired_discordance", DISCORDANCE)))
        if verdict.status == PairedStatus.INCONCLUSIVE and not can.decidable:
            verdict = replace(verdict, decidable=False, detail=(
                f"{verdict.detail}; NOT DECIDABLE, reported, not failed: {can.describe()}"))
    for field, how in (("output_ids", "by token id"), ("response", "by response text")):
        ta, tb = by_id(incumbent, field), by_id(candidate, field)
        common = [k for k in ta if k in tb]
        if common:
            seq = (lambda x: x) if field == "output_ids" else (lambda x: [ord(c) for c in x])
            found = outputs_changed([seq(ta[k]) for k in common], [seq(tb[k]) for k in common])
            return verdict, (f"outputs changed on {found.changed} of {found.n} prompts "
                             f"(compared {how})")
    return verdict, None
