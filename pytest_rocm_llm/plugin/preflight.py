"""What can be checked before the first server launch, checked then.

No pytest in here. A broken baseline file is a ``ConfigError`` (through the same
``BaselineCache`` the checks read later, so there is one validation path and the file is
read once); evaluation data and tools the user pointed at are read and hashed, so a missing
or altered file is known in seconds instead of after the first workload on a GPU node; the
CPU reference's engine environments still to build must fit on the cache's disk; a tuned
kernel table named by path (AITER_CONFIG_FMOE) must exist where the engine runs.
GSM8K without ``--llm-data-dir`` is located in the Hugging Face cache (fetched into it when
absent and the Hub is reachable) and checked by sha256 before any launch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pytest_rocm_llm.errors import ConfigError, Unavailable

if TYPE_CHECKING:
    from pytest_rocm_llm.config.checks import Check
    from pytest_rocm_llm.config.settings import Settings
    from pytest_rocm_llm.config.suite_model import Suite
    from pytest_rocm_llm.config.targets import Target
    from pytest_rocm_llm.verdicts.baselines import BaselineCache


def load_baselines(suites: Iterable[Suite], target: Target, baselines: BaselineCache) -> None:
    """Raises ConfigError naming the file and field of the first broken baseline."""
    for suite in suites:
        baselines.get(target.name, suite.name)


def check_eval_inputs(config: Any, settings: Settings) -> None:
    """Raises Unavailable when the eval's local data or tool is missing or altered."""
    from pytest_rocm_llm.config.evals import EVALS
    from pytest_rocm_llm.kinds import load

    inputs = EVALS.get(config.kind).inputs
    if inputs is not None:
        load(inputs)(config, settings.data_dir, settings.gpqa_csv,  # type: ignore[operator]
                     settings.gpqa_sha256)


def unjudgeable(checks: Iterable[tuple[Suite, Check]], target: Target,
                settings: Settings) -> list[str]:
    """One line per check that will not be judged for want of data or a tool (each eval's
    inputs checked once)."""
    from pytest_rocm_llm.serving.launch import model_problem

    problems: dict[tuple[str, str], str | None] = {}
    models: dict[str, str | None] = {}
    out = []
    for suite, check in checks:
        if target.name not in suite.targets:
            continue  # a suite for other targets skips whole, with its own reason
        if suite.name not in models:
            models[suite.name] = model_problem(suite, target, settings)
        if models[suite.name] is not None:
            out.append(f"{suite.name}/{check.name}: {models[suite.name]}")
            continue
        names = [check.workload, check.relative_to] if check.eval is None else []
        sources = {suite.workload_for(n, target).prompts for n in names if n}
        if check.eval is None and sources <= {"random"}:
            continue
        key = (suite.name, check.eval or "prompts:gsm8k")
        if key not in problems:
            try:
                if check.eval is None:  # natural-text prompts: the GSM8K train set
                    from pytest_rocm_llm.correctness.accuracy import gsm8k

                    gsm8k.passages(settings.data_dir)
                else:
                    check_eval_inputs(suite.eval_for(check.eval, target), settings)
                problems[key] = None
            except Unavailable as exc:
                problems[key] = str(exc)
        if problems[key] is not None:
            out.append(f"{suite.name}/{check.name}: {problems[key]}")
    return out


def reference_builds(suites: Iterable[Suite], target: Target,
                     settings: Settings) -> tuple[list[str], list[str]]:
    """The engines and the reference models this run takes from the CPU reference's cache
    (built there if missing): none on a GPU target, with --llm-endpoint or with an engine
    of the user's own."""
    if target.is_gpu or settings.endpoint is not None or settings.engine_prefix is not None:
        return [], []
    from pytest_rocm_llm.serving.launch import local_model_path

    suites = [suite for suite in suites if target.name in suite.targets]
    engines = [e for suite in suites for e in suite.engines]
    models = [model.reference for suite in suites
              if (model := suite.model_for(target)).reference
              and local_model_path(suite, model, settings) is None]
    return list(dict.fromkeys(engines)), list(dict.fromkeys(models))


def check_reference_space(suites: Iterable[Suite], target: Target,
                          settings: Settings) -> None:
    """Raises ConfigError when the CPU reference environments this run would build do not
    fit on the cache's disk: the installer would fail minutes into the build, mid-run."""
    engines, _ = reference_builds(suites, target, settings)
    if not engines:
        return
    from pytest_rocm_llm.serving.reference.provision import space_problem

    problem = space_problem(settings.cache_dir, engines)
    if problem is not None:
        raise ConfigError(problem)


def check_tuned_tables(suites: Iterable[Suite], target: Target, settings: Settings) -> None:
    """Raises ConfigError when a kernel table a launched server would inherit by path
    (AITER_CONFIG_FMOE) names no readable file where the engine runs."""
    if not target.is_gpu or settings.endpoint is not None:
        return  # the CPU reference has no aiter; an attached server was launched elsewhere
    import os

    from pytest_rocm_llm.serving.launch import server_env
    from pytest_rocm_llm.serving.tuned_tables import table_problem

    prefix = settings.engine_prefix or ()
    where = f" in the engine's environment (`{' '.join(prefix)}`)" if prefix else ""
    for suite in suites:
        if target.name not in suite.targets:
            continue
        for profile in suite.profiles:
            env = {**os.environ, **server_env(suite, target, profile)}
            problem = table_problem(env, prefix, where)
            if problem is not None:
                raise ConfigError(f"suite {suite.name}, profile {profile}: {problem}")


def preflight(suites: Iterable[Suite], checks: Iterable[tuple[Suite, Check]], target: Target,
              settings: Settings, baselines: BaselineCache) -> list[str]:
    """Everything a run can check before its first launch. ConfigError on a broken baseline,
    and on a GPU target for a check that cannot be judged (the run would fail at its end,
    hours later) unless --llm-allow-unjudged; otherwise the lines to announce."""
    suites = list(suites)
    load_baselines(suites, target, baselines)
    check_reference_space(suites, target, settings)
    check_tuned_tables(suites, target, settings)
    problems = unjudgeable(checks, target, settings)
    if problems and target.is_gpu and not settings.allow_unjudged:
        raise ConfigError(
            f"these checks cannot be judged on target {target.name}:\n  "
            + "\n  ".join(problems) + "\nprovide what they need, deselect them, or pass "
            "--llm-allow-unjudged (ini llm_allow_unjudged) to run the rest")
    return [f"[rocm-llm] will not be judged: {line}" for line in problems]
