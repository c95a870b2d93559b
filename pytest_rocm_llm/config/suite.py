"""suite.toml: a suite as data (model, engine, server profiles, per-target overrides).

Parsed with the standard library's tomllib, validated by pydantic models (``SuiteFile`` and
the models of each table) into frozen objects; any problem is a ``ConfigError`` naming the
file and the dotted key.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from pytest_rocm_llm.config.checks import Check, parse_check
from pytest_rocm_llm.config.context_limits import check_suite as check_long_context_fits
from pytest_rocm_llm.config.evals import parse_eval, profiles_of
from pytest_rocm_llm.config.fields import StrList, check, each_one_of, matches
from pytest_rocm_llm.config.suite_model import ModelSpec, Profile, Suite
from pytest_rocm_llm.config.targets import TARGETS, FlagValue
from pytest_rocm_llm.config.toml import Table, TomlTable, override_of, problem, validate
from pytest_rocm_llm.config.workload import Workload, parse_workload
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.kinds import Registry

SUITE_FILE = "suite.toml"
# The engines a suite may name; each entry is the engine's adapter (serving/engines/, the
# Engine protocol), loaded only when a server starts or its flags are checked.
ENGINES: Registry[Any] = Registry("an engine", "pytest_rocm_llm.engines", {
    "sglang": "pytest_rocm_llm.serving.engines.sglang:ENGINE",
    "vllm": "pytest_rocm_llm.serving.engines.vllm:ENGINE"})
# checked when a table is read, not when this module loads: the entry points are read once,
# on first use
_ENGINE = check(lambda v: v is None or v in ENGINES,
                lambda v: f"{v!r} is not a supported engine ({', '.join(ENGINES.names())})")
_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_FLAG = r"[a-z0-9][a-z0-9-]*"
_ENV = r"[A-Za-z_][A-Za-z0-9_]*"


def _flags(flags: dict[str, Any]) -> Mapping[str, FlagValue]:
    out: dict[str, FlagValue] = {}
    for name, value in flags.items():
        if name.startswith("-"):
            raise problem(name, f"write flags without the leading dashes: '{name.lstrip('-')}'")
        if not re.fullmatch(_FLAG, name):
            raise problem(name, "a flag name is lowercase letters, digits and dashes")
        if isinstance(value, list):
            if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                       for v in value):
                raise problem(name, f"a list flag takes strings or numbers, got {value!r}")
            out[name] = tuple(str(v) for v in value)
        elif isinstance(value, (bool, int, float, str)):
            out[name] = value
        else:
            raise problem(name, f"a flag value is a string, number, boolean or array, got "
                                f"{value!r}")
    return MappingProxyType(out)


def _env(env: dict[str, Any]) -> Mapping[str, str]:
    out: dict[str, str] = {}
    for name, value in env.items():
        if not re.fullmatch(_ENV, name):
            raise problem(name, "not a valid environment variable name")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise problem(name, f"an environment value is a string or number, got {value!r}")
        out[name] = str(value)
    return MappingProxyType(out)


Flags = Annotated[dict[str, Any], AfterValidator(_flags)]
Env = Annotated[dict[str, Any], AfterValidator(_env)]


class ProfileOverride(TomlTable):
    """``[targets.<t>.profiles.<p>]``: flags and env only; the engine is the profile's."""

    description: str = ""
    flags: Flags = Field(default_factory=dict)
    env: Env = Field(default_factory=dict)


class ProfileTable(ProfileOverride):
    """``[profiles.<p>]``."""

    engine: Annotated[str | None, _ENGINE] = None


class ModelTable(TomlTable):
    """``[model]`` (and ``[targets.<t>.model]`` over it)."""

    id: str
    served_name: str | None = None
    path: str | None = None
    path_env: Annotated[str | None, matches(_ENV)] = None
    reference: str | None = None


def _has_profiles(profiles: dict[str, ProfileTable]) -> dict[str, ProfileTable]:
    if not profiles:
        raise problem(None, "define at least one profile, e.g. [profiles.default]")
    for name in profiles:
        if not re.fullmatch(_NAME, name):
            raise problem(name, "a profile name is letters, digits, '_', '.' and '-'")
    return profiles


class SuiteSection(TomlTable):
    """``[suite]``."""

    name: Annotated[str | None, matches(_NAME)] = None  # None: the directory's name
    description: str = ""
    engine: Annotated[str, _ENGINE] = "sglang"
    targets: Annotated[StrList, each_one_of(tuple(TARGETS))] = tuple(TARGETS)
    default_profile: str | None = None


class TargetTable(TomlTable):
    """``[targets.<t>]``: that target's overrides of the suite's tables."""

    model: dict[str, Any] | None = None
    profiles: dict[str, ProfileOverride] = Field(default_factory=dict)
    workloads: dict[str, dict[str, Any]] = Field(default_factory=dict)
    evals: dict[str, dict[str, Any]] = Field(default_factory=dict)
    checks: dict[str, dict[str, Any]] = Field(default_factory=dict)


class CandidateTable(TomlTable):
    """``[candidate]``: what a paired run's candidate build serves differently."""

    profiles: dict[str, ProfileOverride] = Field(default_factory=dict)


class SuiteFile(TomlTable):
    """A whole suite.toml. Workloads, evaluations and checks are validated one by one after
    it (each by its kind's model), since checks name workloads and evaluations."""

    suite: SuiteSection
    model: ModelTable
    profiles: Annotated[dict[str, ProfileTable], AfterValidator(_has_profiles)]
    workloads: dict[str, dict[str, Any]] = Field(default_factory=dict)
    evals: dict[str, dict[str, Any]] = Field(default_factory=dict)
    checks: dict[str, dict[str, Any]] = Field(default_factory=dict)
    targets: dict[str, TargetTable] = Field(default_factory=dict)
    candidate: CandidateTable = Field(default_factory=CandidateTable)


def _profile(name: str, t: ProfileOverride) -> Profile:
    return Profile(name, t.description, MappingProxyType(dict(t.flags)),
                   MappingProxyType(dict(t.env)), getattr(t, "engine", None))


def _model(t: ModelTable) -> ModelSpec:
    return ModelSpec(t.id, t.served_name or t.id.rsplit("/", 1)[-1].lower(), t.path,
                     t.path_env, t.reference)


def _overrides(table: Table, what: str, known: Mapping[str, Any],
               parse: Callable[[str, Table], Any]) -> dict[str, Any]:
    """A target's partial overrides of named workloads, evaluations or checks."""
    out = {}
    for name in table.data:
        if name not in known:
            table.fail(name, f"overrides a {what} that does not exist "
                             f"({', '.join(known) or 'none'})")
        out[name] = parse(name, table.sub(name))
    return out


def _not_a_profile(t: Table, key: str, name: str | None, profiles: Mapping[str, Any]) -> None:
    if name not in (None, *profiles):
        t.fail(key, f"{name!r} is not a profile ({', '.join(profiles)})")


def parse_suite(file: Path, data: dict[str, Any]) -> Suite:
    root = Table(data, file)
    f = validate(SuiteFile, root)
    s = root.sub("suite")
    profiles = {n: _profile(n, t) for n, t in f.profiles.items()}
    default_profile = f.suite.default_profile or next(iter(profiles))
    _not_a_profile(s, "default_profile", default_profile, profiles)
    model = _model(f.model)

    workloads: dict[str, Workload] = {}
    wt = root.sub("workloads")
    for wname in f.workloads:
        workloads[wname] = parse_workload(wname, wt.sub(wname))
        _not_a_profile(wt.sub(wname), "profile", workloads[wname].profile, profiles)
    evals: dict[str, Any] = {}
    et = root.sub("evals")
    for ename in f.evals:
        evals[ename] = parse_eval(ename, et.sub(ename))
        for p in profiles_of(evals[ename]):
            _not_a_profile(et.sub(ename), "profile", p, profiles)
    ct = root.sub("checks")
    checks = {c: parse_check(c, ct.sub(c), workloads, None, evals) for c in f.checks}

    target_models: dict[str, ModelSpec] = {}
    target_profiles: dict[str, dict[str, Profile]] = {}
    target_workloads: dict[str, dict[str, Workload]] = {}
    target_checks: dict[str, dict[str, Check]] = {}
    target_evals: dict[str, dict[str, Any]] = {}
    for tname, target in f.targets.items():
        if tname not in TARGETS:
            root.fail(f"targets.{tname}", f"unknown target; targets: {', '.join(TARGETS)}")
        tt = root.sub("targets").sub(tname)
        if target.model is not None:
            mt = tt.sub("model")
            target_models[tname] = _model(validate(ModelTable, mt, override_of(
                ModelTable, model, mt.data)))
        for pname in target.profiles:
            if pname not in profiles:
                tt.sub("profiles").fail(pname, f"overrides a profile that does not exist "
                                               f"({', '.join(profiles)})")
        target_profiles[tname] = {n: _profile(n, p) for n, p in target.profiles.items()}
        target_workloads[tname] = _overrides(
            tt.sub("workloads"), "workload", workloads,
            lambda n, t: parse_workload(n, t, workloads[n]))
        target_evals[tname] = _overrides(
            tt.sub("evals"), "evaluation", evals, lambda n, t: parse_eval(n, t, evals[n]))
        target_checks[tname] = _overrides(
            tt.sub("checks"), "check", checks,
            lambda n, t: parse_check(n, t, workloads, checks[n], evals))
    for pname in f.candidate.profiles:
        if pname not in profiles:
            root.sub("candidate").sub("profiles").fail(
                pname, f"overlays a profile that does not exist ({', '.join(profiles)})")
    suite = Suite(
        name=f.suite.name or file.parent.name,
        file=file,
        description=f.suite.description,
        engine=f.suite.engine,
        targets=f.suite.targets,
        model=model,
        profiles=MappingProxyType(profiles),
        default_profile=default_profile,
        target_models=MappingProxyType(target_models),
        target_profiles=MappingProxyType(target_profiles),
        workloads=MappingProxyType(workloads),
        checks=MappingProxyType(checks),
        target_workloads=MappingProxyType(target_workloads),
        target_checks=MappingProxyType(target_checks),
        evals=MappingProxyType(evals),
        target_evals=MappingProxyType(target_evals),
        candidate_profiles=MappingProxyType(
            {n: _profile(n, p) for n, p in f.candidate.profiles.items()}),
    )
    check_long_context_fits(suite)  # needs the whole suite: profiles as each target runs them
    return suite


@functools.cache
def load_suite(file: Path) -> Suite:
    try:
        with open(file, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read suite file: {exc.strerror}") from None
    return parse_suite(file, data)


def find_suite_file(path: Path, stop: Path) -> Path | None:
    """The suite.toml governing ``path``: in its directory or the nearest parent up to
    ``stop`` (the rootdir)."""
    d = path if path.is_dir() else path.parent
    stop = stop.resolve()
    d = d.resolve()
    while True:
        candidate = d / SUITE_FILE
        if candidate.is_file():
            return candidate
        if d == stop or d.parent == d:
            return None
        d = d.parent
