"""The pytest glue of one check: run (once) what it reads, decide, record, report.

Every outcome leaves a verdict row in the test's ``user_properties`` (they travel to the
xdist controller with the report), queues a baseline entry where the update flow asks for
one, annotates the Allure result when a report is being written, and then passes or fails
the test with a message that leads with what broke.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from pytest_rocm_llm.errors import VerdictFailure
from pytest_rocm_llm.log_tail import file_tail
from pytest_rocm_llm.plugin import allure as allure_report
from pytest_rocm_llm.plugin.check_context import CheckContext
from pytest_rocm_llm.plugin.state import run_session
from pytest_rocm_llm.redact import redact_argv, redact_env, secret_values
from pytest_rocm_llm.report.collector import VERDICT_PROPERTY
from pytest_rocm_llm.serving.container import image_identity
from pytest_rocm_llm.verdicts.judge import (
    Outcome,
    base_verdict,
    judge_eval,
    judge_workload,
    profile_argv,
    unjudged_verdict,
)
from pytest_rocm_llm.verdicts.paired import PairedVerdict
from pytest_rocm_llm.verdicts.provenance import collect
from pytest_rocm_llm.verdicts.status import Status

if TYPE_CHECKING:
    from pytest_rocm_llm.config.checks import Check
    from pytest_rocm_llm.config.suite_model import Suite
    from pytest_rocm_llm.config.targets import Target
    from pytest_rocm_llm.correctness.result import EvalResult
    from pytest_rocm_llm.correctness.runs import EvalRuns
    from pytest_rocm_llm.performance.runs import WorkloadRuns
    from pytest_rocm_llm.performance.workloads import WorkloadResult
    from pytest_rocm_llm.serving.server import LLMServer



def provenance_of(ctx: CheckContext, server: LLMServer) -> dict[str, Any]:
    # A build run from an image (--llm-engine-image) names its own; else the one given.
    build = next((b for b in ctx.settings.builds if b.name == server.build), None)
    own = build.image if build is not None else None
    image = own or ctx.settings.container_image
    # Its id and digests as the runtime knows them: a tag can move, the id cannot.
    identity = (image_identity(ctx.settings.container_runtime, own)
                if own and ctx.settings.container_runtime else {})
    return collect(
        engine=server.engine, engine_version=server.engine_version,
        profile_argv=profile_argv(ctx.suite, ctx.target, server.profile),
        model=ctx.suite.model_for(ctx.target).id, launch_argv=server.argv,
        suite_dir=ctx.suite.directory, container_image=image,
        local=server.process is not None, log_path=server.log_path,
        env={**os.environ, **server.env}, image_id=identity.get("image_id"),
        image_digests=identity.get("image_digests"))


def server_attachments(server: LLMServer) -> list[allure_report.Attachment]:
    secrets = secret_values(server.argv, server.env)
    out = [allure_report.Attachment(
        f"server argv ({server.name})",
        " ".join(redact_argv(server.argv)) + "\n\nenvironment:\n" + "\n".join(
            f"{k}={v}" for k, v in redact_env(server.env).items()), "text")]
    if server.log_path is not None and server.log_path.is_file():
        # The engine's own output quotes its arguments (sglang logs server_args): masked.
        tail = file_tail(server.log_path, secrets=secrets)
        out.append(allure_report.Attachment(
            f"server log tail ({server.name}, last {len(tail.splitlines())} lines)", tail,
            "text"))
    return out


def workload_attachments(result: WorkloadResult, artifacts: Mapping[str, str]
                         ) -> list[allure_report.Attachment]:
    from pytest_rocm_llm.client.records import records_to_csv
    from pytest_rocm_llm.report import plots

    w = result.workload
    out = [allure_report.Attachment(f"metrics ({w.name})", json.dumps(
        {"workload": w.name, "metrics": result.metrics, "trials": result.trials,
         "steps": result.steps}, indent=2, default=str), "json"),
        allure_report.Attachment(f"per-request records ({w.name})",
                                 records_to_csv(result.records), "csv")]
    hist = plots.latency_histogram(result.records, f"{w.name}: latency")
    if hist:
        out.append(allure_report.Attachment(f"latency histogram ({w.name})", hist, "png"))
    if result.steps:
        sweep = plots.throughput_vs_rate(result.steps, f"{w.name}: throughput vs rate")
        if sweep:
            out.append(allure_report.Attachment(f"throughput vs rate ({w.name})", sweep, "png"))
    return out


def finish(request: pytest.FixtureRequest, ctx: CheckContext, outcome: Outcome,
           attachments: Callable[[], list[allure_report.Attachment]],
           paired: PairedVerdict | None = None) -> float | None:
    """Record the verdict (and a paired run's paired verdict), then pass or fail the test:
    the stored baseline's and floors' failure first, else the paired verdict's."""
    from pytest_rocm_llm.plugin.paired_checks import (
        paired_attachment,
        paired_failure,
        record_paired,
    )

    d = outcome.decision
    request.node.user_properties.append((VERDICT_PROPERTY, d.verdict.to_json()))
    if paired is not None:
        record_paired(request, paired)
        shown = attachments
        attachments = lambda: [*shown(), paired_attachment(paired)]  # noqa: E731
    if d.write is not None:
        path, _ = ctx.baselines.get(ctx.target.name, ctx.suite.name)
        ctx.collector.queue(path, ctx.suite.name, ctx.target.name, d.verdict.check, d.write)
    if allure_report.active(request.config):
        allure_report.annotate(d.verdict, attachments())
    __tracebackhide__ = True
    if outcome.error is not None:
        raise outcome.error
    paired_failure(ctx, paired)
    return d.verdict.measured


def infrastructure(request: pytest.FixtureRequest, ctx: CheckContext, check: Check,
                   profile: str, feature: str, exc: Exception) -> None:
    msg = ctx.infrastructure(exc)
    base = base_verdict(check, ctx.suite, ctx.target, profile, feature, request.node.nodeid,
                        check.workload, {})
    v = replace(base, status=Status.INFRASTRUCTURE, message=msg, references=())
    request.node.user_properties.append((VERDICT_PROPERTY, v.to_json()))
    if allure_report.active(request.config):
        allure_report.annotate(v, [])
    pytest.fail(msg, pytrace=False)


def run_workload_check(request: pytest.FixtureRequest, ctx: CheckContext, check: Check,
                       servers: Callable[..., LLMServer],
                       runs: WorkloadRuns) -> float | None:
    assert check.workload is not None
    reference: WorkloadResult | None = None
    if check.relative_to is not None:
        # The reference run first, from the session's cache when an earlier test ran it (then
        # its server is not asked for at all); else on its own profile's server, before this
        # check's own, so on a node holding one server at a time the one left up is the one
        # the next tests of this check's profile want. A stopped reference server relaunches.
        rw = ctx.suite.workload_for(check.relative_to, ctx.target)
        reference = runs.results.get((ctx.suite.name, rw.name))
        if reference is None:
            ref_profile = rw.profile or ctx.suite.default_profile
            ref_server = servers(ref_profile)
            try:
                reference = runs.get(ctx.suite.name, rw, ref_server)
            except ctx.infra_errors as exc:
                infrastructure(request, ctx, check, ref_profile, "performance", exc)
                raise  # unreachable: pytest.fail raised
    w = ctx.suite.workload_for(check.workload, ctx.target)
    profile = w.profile or ctx.suite.default_profile
    paired = None
    both: dict[str, LLMServer] = {}
    try:
        if ctx.paired is not None and reference is None:
            from pytest_rocm_llm.plugin.paired_checks import describe_builds, run_paired_workload

            result, server, paired, both = run_paired_workload(request, ctx, check, servers,
                                                               runs, ctx.paired)
            describe_builds(request, ctx, profile, both)
        else:
            server = servers(profile)  # skips or fails (infrastructure) by itself
            result = runs.get(ctx.suite.name, w, server)
    except ctx.infra_errors as exc:
        infrastructure(request, ctx, check, profile, "performance", exc)
        raise  # unreachable: pytest.fail raised
    if ctx.paired is not None and paired is None:
        paired = unpaired_row(check, (
            f"relative to {check.relative_to}: measured on the incumbent only"
            if reference is not None else f"a trial of either build lacked {check.metric}"))
    artifacts = runs.artifacts(ctx.suite.name, w.name)
    outcome = judge_workload(check, result, ctx.suite, ctx.target, server, ctx.baselines,
                             ctx.recording_mode(paired),
                             provenance_of(ctx, server), request.node.nodeid, artifacts,
                             reference)

    def attachments() -> list[allure_report.Attachment]:
        out = [a for srv in (both.values() or [server]) for a in server_attachments(srv)]
        out += workload_attachments(result, artifacts)
        if reference is not None:
            out += workload_attachments(reference, runs.artifacts(
                ctx.suite.name, reference.workload.name))
        return out

    return finish(request, ctx, outcome, attachments, paired)


def eval_attachments(result: EvalResult) -> list[allure_report.Attachment]:
    return [
        allure_report.Attachment(f"metrics ({result.name})", json.dumps(
            {"evaluation": result.name, "kind": result.kind, "metrics": dict(result.metrics),
             "problems": list(result.problems), "details": list(result.details)}, indent=2),
            "json"),
        allure_report.Attachment(f"per-item records ({result.name})",
                                 json.dumps(list(result.records), indent=1, default=str),
                                 "json")]


def unpaired_row(check: Check, reason: str) -> PairedVerdict:
    """A paired run's row for a check without a paired verdict (never a failure)."""
    from pytest_rocm_llm.verdicts.paired import unpaired

    return unpaired(check.name, check.metric, check.unit, check.direction,  # type: ignore[arg-type]
                    reason)


def run_eval_check(request: pytest.FixtureRequest, ctx: CheckContext, check: Check,
                   servers: Callable[..., LLMServer], evals: EvalRuns) -> float | None:
    from pytest_rocm_llm.config.evals import profiles_of
    from pytest_rocm_llm.correctness.runs import EvalUnavailable
    from pytest_rocm_llm.serving.launch import ConfigProblem

    assert check.eval is not None
    config = ctx.suite.eval_for(check.eval, ctx.target)
    profile = profiles_of(config)[0] or ctx.suite.default_profile
    candidate = ctx.settings.candidate if ctx.candidate_evals is not None else None
    paired = None
    pool = run_session(request.config).servers()  # llm_judge's servers started it
    try:
        if (candidate is not None and ctx.candidate_evals is not None
                and pool.serving_build(ctx.suite.name) == candidate.name):
            # The candidate's server is up: its run first saves a switch (report/schedule.py)
            ctx.candidate_evals.get(ctx.suite.name, config, lambda p=None: servers(p, candidate))
        result = evals.get(ctx.suite.name, config, servers)
        if candidate is not None and ctx.candidate_evals is not None:
            # The same items on the candidate; the stored baseline judges the candidate.
            from pytest_rocm_llm.plugin.paired_checks import paired_eval, record_outputs

            base_result = result
            result = ctx.candidate_evals.get(ctx.suite.name, config,
                                             lambda p=None: servers(p, candidate))
            base_server = pool.last(
                ctx.suite.name, profile, ctx.settings.incumbent.name) or servers(profile)
            paired, outputs = paired_eval(check, base_result, result, config)
            if outputs is not None:
                record_outputs(request, ctx, config.name, outputs)
    except EvalUnavailable as exc:
        pytest.skip(f"{check.name}: {exc}")
    except ConfigProblem as exc:  # e.g. a length the served context cannot hold
        pytest.fail(f"{check.name}: {exc}", pytrace=False)
    except ctx.infra_errors as exc:
        infrastructure(request, ctx, check, profile, "correctness", exc)
        raise  # unreachable: pytest.fail raised
    if candidate is not None and paired is None:
        paired = unpaired_row(check, f"{check.metric} of {config.kind} has no per-item "
                                     "correctness to pair; the candidate is judged against "
                                     "its floor and stored baseline only")
    if candidate is not None:
        # The server that answered, running or not: asking the pool again would restart a
        # stopped candidate (a GPU node holds one build) only to label the verdict.
        server = pool.last(
            ctx.suite.name, profile, candidate.name) or servers(profile, candidate)
    else:
        server = servers(profile)
    artifacts = evals.artifacts(ctx.suite.name, config.name)
    outcome = judge_eval(check, result, ctx.suite, ctx.target, server, ctx.baselines,
                         ctx.recording_mode(paired),
                         provenance_of(ctx, server), request.node.nodeid, artifacts)
    shown = [server] if candidate is None else [base_server, server]
    return finish(request, ctx, outcome, lambda: [
        a for srv in shown for a in server_attachments(srv)] + eval_attachments(result), paired)


def record_unjudged(item: pytest.Item, report: pytest.TestReport, excinfo: Any,
                    suite: Suite, target: Target) -> None:
    """A check's test that skipped or failed before recording a verdict (a fixture's skip in
    setup, missing data, a server that never came up) gets a not-judged row with the reason,
    on the report so it reaches the xdist controller like any other row. Deselected tests
    never run, so they get none."""
    if report.when == "teardown" or report.passed or hasattr(report, "wasxfail"):
        return
    if target.name not in suite.targets:
        return  # not declared for this target: the suite's skip says so, no row is owed
    check = getattr(item, "callspec", None) and item.callspec.params.get("llm_check")
    if check is None or any(name == VERDICT_PROPERTY for name, _ in item.user_properties):
        return
    if excinfo is not None and isinstance(excinfo.value, VerdictFailure):
        return  # the test judged the build itself (a floor missed, a precondition not met)
    text = ((str(excinfo.value) or type(excinfo.value).__name__) if excinfo is not None
            else report.longreprtext)
    text = text.removeprefix(f"{check.name}: ")
    reason = f"{'skipped' if report.skipped else 'failed before judging'}: {text}"
    row = (VERDICT_PROPERTY, unjudged_verdict(check, suite, target, item.nodeid,
                                              reason).to_json())
    item.user_properties.append(row)
    report.user_properties.append(row)
