"""What a suite would do on a target, without starting a server: the plan.

``render_plan`` is a pure function of the parsed suite, the target, the settings and the flag
check's verdicts; its text is stable (no timestamps, ports or host paths other than the model
path the user gave), so two renders of the same inputs are identical and a plan can be kept
and diffed. Command lines and server environments come from the pool's own code
(``ServerPool.launch_argv`` / ``server_env``), so the plan shows what a run would launch.
``gather_flag_checks`` runs the engine's own argument parser over every profile the way the
pool does before a launch.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_rocm_llm.config.builds import Build
from pytest_rocm_llm.config.evals import profiles_of
from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite_model import Suite
from pytest_rocm_llm.config.targets import Target
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.redact import redact_argv, redact_env, redact_text, secret_values
from pytest_rocm_llm.report.plan_checks import check_lines
from pytest_rocm_llm.report.plan_checks import num as _num
from pytest_rocm_llm.report.plan_status import Blocker, PlanStatus
from pytest_rocm_llm.report.run_time import estimate
from pytest_rocm_llm.serving.engines import EngineError, FlagCheck, get_engine
from pytest_rocm_llm.serving.launch import check_argvs, local_model_path
from pytest_rocm_llm.serving.pool import ServerPool, SuiteUnavailable
from pytest_rocm_llm.verdicts.baselines import BaselineCache, BaselineFile

PORT = "<port>"
ENGINE = "<engine-python>"
MODEL_UNSET = "<model-path>"
STUBS_PLACEHOLDER = "<pytest_rocm_llm>/reference/stubs"

# Variables the engine reads from the environment it inherits (the pool adds a profile's env
# to a copy of pytest's) that pick tuned kernels on ROCm; unset, the engine quietly falls back
# to its defaults, so the plan shows each one's value. A profile whose description names one
# wants it: the plan lists it under "needs attention" while it is unset.
#   AITER_CONFIG_FMOE: aiter's tuned fused-MoE table (ROCm/aiter aiter/jit/core.py); sglang
#     0.5.23 runs Quark MXFP4 MoE through aiter's fused_moe.
#   SGLANG_MOE_CONFIG_DIR: sglang's Triton fused-MoE configs (fused_moe_triton_config.py).
INHERITED_TUNING_ENV: Mapping[str, Mapping[str, str]] = {
    "sglang": {
        "AITER_CONFIG_FMOE": "aiter's tuned fused-MoE table; unset: aiter's bundled tables",
        "SGLANG_MOE_CONFIG_DIR": "sglang's Triton MoE configs; unset: the ones sglang ships",
    },
}


@dataclass(frozen=True)
class FlagReport:
    """The engine parser's verdicts on a suite's profiles, or why they could not be had."""

    version: str | None
    results: Mapping[str, FlagCheck] | None
    error: str | None


def model_path(suite: Suite, target: Target, settings: Settings,
               environ: Mapping[str, str]) -> str | None:
    """The model directory a run would serve if the user named one (option, env, suite),
    resolved as the pool resolves it, taken as given (the plan may be made elsewhere)."""
    return local_model_path(suite, suite.model_for(target), settings, environ,
                            must_exist=False)


def _model_line(suite: Suite, target: Target, settings: Settings,
                environ: Mapping[str, str]) -> tuple[str | None, str]:
    model = suite.model_for(target)
    path = model_path(suite, target, settings, environ)
    if path is not None:
        return path, path
    # As the pool: a reference model is built locally, which a command prefix cannot use.
    if model.reference and not (settings.engine_prefix and len(settings.engine_prefix) > 1):
        return None, f"built by the plugin: CPU reference {model.reference}"
    hint = f"set {model.path_env} or " if model.path_env else ""
    return None, f"not set: {hint}pass --llm-model-path"


def _pool(settings: Settings, target: Target) -> ServerPool:
    return ServerPool(dataclasses.replace(settings, target=target), Path("."),
                      progress=lambda _msg: None)


def _shown_argv(pool: ServerPool, suite: Suite, profile: str, model: str) -> list[str]:
    """The pool's launch line with the interpreter and port as placeholders."""
    argv = pool.launch_argv(suite, profile, (ENGINE,), model, 0)
    i = argv.index("--port")
    argv[i + 1] = PORT
    return argv


def _shown_env(pool: ServerPool, suite: Suite, profile: str) -> dict[str, str]:
    env = redact_env(pool.server_env(suite, profile))
    if "PYTHONPATH" in env:
        from pytest_rocm_llm.serving.reference.provision import STUBS

        env["PYTHONPATH"] = env["PYTHONPATH"].replace(str(STUBS), STUBS_PLACEHOLDER)
    return env


def _engine_line(suite: Suite, target: Target, settings: Settings) -> str:
    prefix = settings.engine_prefix
    if settings.engine_image is not None:
        return (f"{suite.engine}, one container per server from {settings.engine_image} "
                f"({settings.container_runtime}, --llm-engine-image)")
    if prefix is not None and len(prefix) > 1:
        return f"{suite.engine}, run by `{' '.join(prefix)}` (--llm-engine-cmd)"
    if prefix is not None:
        return f"{suite.engine}, run by the interpreter given with --llm-engine-python"
    if not target.is_gpu:
        return f"{suite.engine}, CPU reference environment (built once in the cache)"
    return f"{suite.engine}, run by the Python running pytest"


def _quote(word: str) -> str:
    return word if re.fullmatch(r"[A-Za-z0-9_@%+=:,./<>-]+", word) else repr(word)


def _verdict(name: str, engine: str, results: Mapping[str, FlagCheck] | None,
             error: str | None, version: str | None) -> str:
    if results is not None and name in results:
        check = results[name]
        by = f"{engine} {version}'s parser" if version else f"{engine}'s parser"
        return f"accepted by {by}" if check.ok else f"REJECTED by {by}: {check.message}"
    if error is not None:
        return f"not checked: {error.splitlines()[0]}"
    return "not checked"


def _stored_baselines(baselines: BaselineCache, target: Target,
                      suite: Suite) -> BaselineFile | None:
    """The suite's stored baselines for the plan's gate lines; a broken file is the plan's
    blocker (exit 12, plan_status), not a reason to stop drawing the plan."""
    try:
        return baselines.get(target.name, suite.name)[1]
    except ConfigError:
        return None


def render_plan(suite: Suite, target: Target, settings: Settings,
                flag_results: Mapping[str, FlagCheck] | None, flag_error: str | None,
                *, engine_version: str | None = None,
                environ: Mapping[str, str] | None = None,
                baselines: BaselineCache | None = None) -> str:
    """The plan of ``suite`` on ``target`` as text: target, model, each profile's command line,
    environment and flag verdict, workloads with their sizes, checks with floors and sources,
    and what needs attention before a run."""
    env_in = os.environ if environ is None else environ
    out: list[str] = []
    attention: list[str] = []
    w = out.append

    w(f"plan: suite {suite.name} on target {target.name}")
    if suite.description:
        w(f"  {suite.description}")
    w(f"suite file: {suite.directory.name}/{suite.file.name}")
    if target.name not in suite.targets:
        w(f"NOTE: suite {suite.name} does not run on {target.name} "
          f"(targets: {', '.join(suite.targets)}); its tests would skip")
        attention.append(f"target {target.name} is not one of the suite's targets")

    w("")
    w(f"target: {target.name}: {target.description}")
    hbm = f"{target.hbm_gb_per_gpu} GB HBM per GPU" if target.hbm_gb_per_gpu else "no HBM figure"
    cost = (f"${target.usd_per_gpu_hour:g}/GPU-hour" if target.usd_per_gpu_hour is not None
            else "no published cost figure")
    w(f"  architecture {target.arch or 'none (CPU)'}, {target.gpus_per_node} "
      f"{'GPUs' if target.is_gpu else 'device'} per node, {hbm}, {cost}, "
      f"{target.max_servers} server(s) at a time")

    path, model_text = _model_line(suite, target, settings, env_in)
    model = suite.model_for(target)
    w("")
    w(f"model: {model.id} (served as {model.served_name})")
    w(f"  path: {model_text}")
    if path is None and not model_text.startswith("built by the plugin"):
        attention.append(f"model path {model_text}")
    w(f"engine: {_engine_line(suite, target, settings)}")

    tuning = INHERITED_TUNING_ENV.get(suite.engine, {}) if target.is_gpu else {}
    if tuning:
        w("inherited from the environment pytest runs in (kernel tuning):")
        for name, what in tuning.items():
            value = env_in.get(name)
            w(f"  {name} = {value if value else 'not set'}  ({what})")
            wanting = [p for p, prof in suite.profiles.items() if name in prof.description]
            if wanting and not value:
                attention.append(f"{name} is not set, and profile(s) {', '.join(wanting)} "
                                 f"want it: {what}")

    pool = _pool(settings, target)
    # The flag check's verdicts and errors may quote a profile's values: the whole text is
    # masked with every profile's secrets at the end.
    secrets: set[str] = set()
    for name in suite.profiles:
        profile = suite.profile_for(name, target)
        default = " (default)" if name == suite.default_profile else ""
        w("")
        w(f"profile {name}{default}: {profile.description}")
        argv = _shown_argv(pool, suite, name, path or MODEL_UNSET)
        secrets.update(secret_values(argv, pool.server_env(suite, name)))
        w("  argv: " + " ".join(_quote(a) for a in redact_argv(argv)))
        env = _shown_env(pool, suite, name)
        if env:
            w("  env:")
            for key in sorted(env):
                w(f"    {key}={env[key]}")
        else:
            w("  env: (none)")
        verdict = _verdict(name, suite.engine, flag_results, flag_error, engine_version)
        w(f"  flags: {verdict}")
        if verdict.startswith("REJECTED"):
            attention.append(f"profile {name}: {verdict}")

    w("")
    w("workloads:")
    if not suite.workloads:
        w("  (none)")
    total_requests = total_tokens = 0
    for wname in suite.workloads:
        wl = suite.workload_for(wname, target)
        n, tokens = wl.expected_tokens
        total_requests += n
        total_tokens += tokens
        profile_name = wl.profile or suite.default_profile
        w(f"  {wname}: {wl.kind} on profile {profile_name}, api {wl.api}"
          + (f" - {wl.description}" if wl.description else ""))
        shape = [f"{wl.input_tokens} in / {wl.output_tokens} out",
                 f"{wl.requests} requests" + (" per rate" if wl.arrivals == "at_each_rate" else ""),
                 f"{wl.warmup} warm-up", f"seed {wl.seed}"]
        shape.append("natural-text prompts (gsm8k train)" if wl.prompts == "gsm8k"
                     else "random-id prompts")
        if wl.cache_hit:
            shape.append(f"cache hit {wl.cache_hit:.0%}")
        if wl.request_rate is not None:
            shape.append(f"{_num(wl.request_rate)} req/s (arrivals over "
                         f"{wl.requests / wl.request_rate:.0f} s)")
        if wl.rates:
            shape.append("rates " + ", ".join(_num(r) for r in wl.rates) + " req/s")
        if wl.ttft_slo_s is not None:
            shape.append(f"TTFT SLO {_num(wl.ttft_slo_s)} s")
        w("    " + ", ".join(shape))
        w(f"    sends ~{n} requests, {tokens:,} prompt + output tokens"
          + (" (if every rate holds)" if wl.arrivals == "at_each_rate" else ""))
    if suite.workloads:
        w(f"  total: ~{total_requests} requests, {total_tokens:,} tokens")

    w("")
    if suite.evals:
        w("evaluations:")
        for name in suite.evals:
            e = suite.eval_for(name, target)
            sizes = {k: getattr(e, k) for k in ("limit", "shots", "prompts",
                                                   "hypothesis_examples", "lengths", "samples",
                                                   "max_tokens", "concurrency", "domain")
                     if getattr(e, k, None) not in (None, ())}
            if getattr(e, "chat_template_kwargs", ()):
                sizes["chat_template_kwargs"] = json.dumps(dict(e.chat_template_kwargs))
            on = " vs ".join(p or suite.default_profile for p in profiles_of(e))
            w(f"  {name}: {e.kind} on profile {on}; "
              + ", ".join(f"{k} {v}" for k, v in sizes.items()))
        w("")
    stored = _stored_baselines(baselines or BaselineCache(settings.baselines_dir), target, suite)
    out.extend(check_lines(suite, target, stored))
    w("")
    if settings.candidate is None:  # a paired run's estimate follows its schedule
        out.extend(estimate(suite, target, settings).lines())
        w("")
    if flag_error is not None:
        attention.append(f"flags not checked: {flag_error.splitlines()[0]}")
    w("needs attention:" if attention else "needs attention: nothing")
    for item in attention:
        w(f"  - {item}")
    return redact_text("\n".join(out) + "\n", secrets)


def gather_flag_checks(suite: Suite, target: Target, settings: Settings,
                       progress: Callable[[str], None] = print,
                       build: Build | None = None) -> FlagReport:
    """Every profile's command line parsed by the engine's own parser, in the environment the
    pool would use for ``target`` (the CPU reference's for ``cpu``, else the given engine
    prefix or this Python). Problems come back as ``error``, never raised: a plan is still
    worth printing when the engine cannot be reached."""
    from pytest_rocm_llm.serving.reference.provision import ProvisionError

    pool = ServerPool(dataclasses.replace(settings, target=target), Path("."), progress)
    path = model_path(suite, target, settings, os.environ) or MODEL_UNSET
    versions: list[str] = []
    results: dict[str, FlagCheck] = {}
    # Profiles may run on different engines (the CPU reference's parity pair runs on vLLM):
    # each engine's own parser checks its profiles.
    for name in sorted({suite.engine_of(p) for p in suite.profiles}):
        engine = get_engine(name)
        profiles = suite.profiles_of(name)
        try:
            prefix = pool.engine_prefix(suite, name, build)
            chosen = build if build is not None else settings.incumbent
            if chosen.image is not None:  # checked by the image's own engine, in a container
                prefix = pool.in_container(suite, name, chosen, path) + prefix
            argvs = check_argvs(suite, target, settings, name, path, build)
            progress(f"[rocm-llm] {suite.name}: checking {len(argvs)} profile(s) with "
                     f"{name}'s own argument parser"
                     + (f" ({build.name} build)" if build is not None else ""))
            version, checks = engine.check_flags(
                prefix, argvs, env=pool.server_env(suite, profiles[0], build))
        except (EngineError, ProvisionError, OSError, SuiteUnavailable) as exc:
            return FlagReport(None, None, str(exc))
        versions.append(version if len(versions) == 0 and name == suite.engine
                        else f"{name} {version}")
        results.update({c.profile: c for c in checks})
    return FlagReport("; ".join(versions), results, None)


def blockers_of(suite: Suite, target: Target, settings: Settings,
                report: FlagReport) -> list[Blocker]:
    """What in a suite's plan stops its run before any launch (see plan_status)."""
    from pytest_rocm_llm.serving.launch import model_problem

    out: list[Blocker] = []
    for name, check in sorted((report.results or {}).items()):
        if not check.ok:
            out.append(Blocker(PlanStatus.FLAGS_REJECTED,
                               f"{suite.name}/{name}: flags rejected: "
                               f"{check.message.splitlines()[0] if check.message else ''}"))
    problem = model_problem(suite, target, settings)
    if problem is not None:
        out.append(Blocker(PlanStatus.MODEL_MISSING, f"{suite.name}: {problem}"))
    if report.error is not None:
        out.append(Blocker(PlanStatus.FLAGS_UNCHECKED,
                           f"{suite.name}: flags not checked: {report.error.splitlines()[0]}"))
    return out


def print_plans(suites: list[Suite], target: Target, settings: Settings,
                tr: Any, progress: Callable[[str], None],
                baselines: BaselineCache | None = None) -> list[Blocker]:
    """--llm-plan: each suite's plan as a terminal section; no server, no test. Returns what
    blocks the run (the caller adds the pre-launch checks and sets the exit status).
    ``baselines``: the run's cache, so the pre-launch checks read each file no second time."""
    blockers: list[Blocker] = []
    for suite in suites:
        report = gather_flag_checks(suite, target, settings, progress)
        text = render_plan(suite, target, settings, report.results, report.error,
                           engine_version=report.version, baselines=baselines)
        tr.section(f"rocm-llm plan: {suite.name} on {target.name}")
        for line in text.splitlines():
            tr.write_line(line)
        if target.name in suite.targets:
            blockers += blockers_of(suite, target, settings, report)
        if settings.candidate is not None and target.name in suite.targets:
            for line in _candidate_lines(suite, target, settings, progress, blockers):
                tr.write_line(line)
    return blockers


def _candidate_lines(suite: Suite, target: Target, settings: Settings,
                     progress: Callable[[str], None], blockers: list[Blocker]) -> list[str]:
    """A paired run's part of the plan: the candidate build, its own parser's verdicts and
    the schedule of both builds' servers."""
    from pytest_rocm_llm.report.schedule import paired_schedule

    cand = settings.candidate
    assert cand is not None
    report = gather_flag_checks(suite, target, settings, progress, cand)
    out = ["", f"candidate build: {cand.describe().split(': ', 1)[1]}"]
    for name in suite.profiles:
        out.append(f"  profile {name}: flags: "
                   + _verdict(name, suite.engine, report.results, report.error, report.version))
    for b in blockers_of(suite, target, settings, report):
        if b.status is not PlanStatus.MODEL_MISSING:  # the baseline's line said it already
            blockers.append(Blocker(b.status, f"candidate build: {b.text}"))
    out.append("")
    out += paired_schedule(suite, target, settings)
    return out
