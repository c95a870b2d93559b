"""What a server of a (suite, profile, build) is launched with: model path, argv, environment,
and the argv the engine's own parser checks. No pytest, no process, no provisioning here.

The pool launches from these and the plan (report/plan.py) prints from them, so a plan shows
what a run launches and cannot drift from it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pytest_rocm_llm.config.builds import Build
from pytest_rocm_llm.config.settings import Settings, env_lookup, old_env_name
from pytest_rocm_llm.config.suite_model import ModelSpec, Suite
from pytest_rocm_llm.config.targets import Target
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.serving.engines import flags_to_argv, get_engine

# The flag check's port: the parser does not care, and the plan and the pool must agree.
CHECK_PORT = 30000


class ConfigProblem(ConfigError):
    """The suite's configuration is wrong for the installed engine (e.g. an unknown flag).
    Found only once a server is prepared, so it fails the test rather than the run."""


def local_model_path(suite: Suite, model: ModelSpec, settings: Settings,
                     environ: Mapping[str, str] | None = None, *,
                     must_exist: bool = True) -> str | None:
    """The model directory the user named (option, variable, suite path), if any; a
    variable naming no directory is a ConfigProblem. Nothing is provisioned here. With
    ``must_exist=False`` (the plan, on another machine) a named path is taken as given."""
    if settings.model_path is not None:
        return str(settings.model_path)
    found = (env_lookup(model.path_env, old_env_name(model.path_env), environ)
             if model.path_env else None)
    if found is not None:
        path = Path(found[1]).expanduser()
        if must_exist and not path.is_dir():
            raise ConfigProblem(f"${found[0]}={path} is not a directory "
                                f"(suite {suite.name}, model {model.id})")
        return str(path)
    if model.path:
        path = Path(model.path).expanduser()
        if not path.is_absolute():
            path = suite.directory / path
        if path.is_dir() or not must_exist:
            return str(path)
    return None


def model_missing(model: ModelSpec) -> str:
    hint = f"set ${model.path_env} or " if model.path_env else ""
    return f"model {model.id} not found: {hint}pass --llm-model-path"


def model_problem(suite: Suite, target: Target, settings: Settings) -> str | None:
    """Why the suite's model cannot be served here, known before any launch (None: it can,
    or the CPU reference will build it). Attach mode serves what the endpoint has."""
    if settings.endpoint is not None or target.name not in suite.targets:
        return None
    model = suite.model_for(target)
    try:
        if local_model_path(suite, model, settings) is not None or model.reference:
            return None
    except ConfigProblem as exc:
        return str(exc)
    return model_missing(model)


def launch_argv(suite: Suite, target: Target, settings: Settings, profile: str,
                prefix: tuple[str, ...], model_path: str, port: int,
                build: Build | None = None) -> list[str]:
    """The server's command line; a build's flags come after the profile's (they win)."""
    engine = get_engine(suite.engine_of(profile))
    flags = suite.profile_for(profile, target, build.name if build else None).flags
    model = suite.model_for(target)
    argv = engine.launch_argv(prefix, model_path, model.served_name, settings.host, port,
                              flags)
    return argv + list(build.flags if build is not None else ())


def check_argvs(suite: Suite, target: Target, settings: Settings, engine_name: str,
                model_path: str, build: Build | None = None) -> dict[str, list[str]]:
    """Each of the engine's profiles' arguments as its own parser checks them."""
    engine = get_engine(engine_name)
    model = suite.model_for(target)
    extra = list(build.flags if build is not None else ())
    return {
        name: [*engine.base_args(model_path, model.served_name, settings.host, CHECK_PORT),
               *flags_to_argv(suite.profile_for(name, target,
                                                build.name if build else None).flags),
               *extra]
        for name in suite.profiles_of(engine_name)
    }


def server_env(suite: Suite, target: Target, profile: str,
               build: Build | None = None) -> dict[str, str]:
    """What the server's environment adds to pytest's: the profile's, then the build's."""
    env = dict(suite.profile_for(profile, target, build.name if build else None).env)
    if not target.is_gpu and suite.engine_of(profile) == "sglang":
        from pytest_rocm_llm.serving.reference.provision import STUBS

        # sgl_kernel has no CPU build on PyPI; the stub lets sglang import on CPU.
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(STUBS), env.get("PYTHONPATH", "")) if p)
    if build is not None:
        env.update(build.env)
    return env
