"""suite.toml: a suite as data (model, engine, server profiles, per-target overrides).

Parsed with the standard library's tomllib and validated into frozen objects; any problem is a
``ConfigError`` naming the file and the dotted key.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_rocm_llm.config.evals import parse_eval, profiles_of
from pytest_rocm_llm.config.targets import TARGETS, FlagValue, Target
from pytest_rocm_llm.config.toml import Table
from pytest_rocm_llm.config.workload import Workload, parse_workload
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.serving.context_limits import check_suite as check_long_context_fits
from pytest_rocm_llm.verdicts.checks import Check, parse_check

SUITE_FILE = "suite.toml"
ENGINES = ("sglang", "vllm")
_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_FLAG = r"[a-z0-9][a-z0-9-]*"
_ENV = r"[A-Za-z_][A-Za-z0-9_]*"


@dataclass(frozen=True)
class ModelSpec:
    id: str
    served_name: str
    path: str | None = None
    path_env: str | None = None
    # Name of a model the plugin provisions itself (the CPU reference's SmolLM2).
    reference: str | None = None


@dataclass(frozen=True)
class Profile:
    """A named server configuration: engine flags (without the leading --) and environment."""

    name: str
    description: str
    flags: Mapping[str, FlagValue]
    env: Mapping[str, str]
    # The engine serving this profile; None: the suite's. Lets a CPU suite run the profiles
    # sglang cannot run on CPU (speculative decoding) on vLLM's CPU build.
    engine: str | None = None


@dataclass(frozen=True)
class Suite:
    name: str
    file: Path
    description: str
    engine: str
    targets: tuple[str, ...]
    model: ModelSpec
    profiles: Mapping[str, Profile]
    default_profile: str
    target_models: Mapping[str, ModelSpec] = field(default_factory=dict)
    target_profiles: Mapping[str, Mapping[str, Profile]] = field(default_factory=dict)
    workloads: Mapping[str, Workload] = field(default_factory=dict)
    checks: Mapping[str, Check] = field(default_factory=dict)
    evals: Mapping[str, Any] = field(default_factory=dict)  # name -> the kind's config
    target_evals: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # target -> name -> the workload / check as overridden for that target
    target_workloads: Mapping[str, Mapping[str, Workload]] = field(default_factory=dict)
    target_checks: Mapping[str, Mapping[str, Check]] = field(default_factory=dict)

    @property
    def directory(self) -> Path:
        return self.file.parent

    def model_for(self, target: Target) -> ModelSpec:
        return self.target_models.get(target.name, self.model)

    def workload_for(self, name: str, target: Target | None) -> Workload:
        """The workload as overridden for ``target`` (as declared when there is none)."""
        override = self.target_workloads.get(target.name, {}) if target else {}
        return override.get(name) or self.workloads[name]

    def eval_for(self, name: str, target: Target | None) -> Any:
        override = self.target_evals.get(target.name, {}) if target else {}
        return override.get(name) or self.evals[name]

    def check_profile(self, check: Check, target: Target | None) -> str:
        """The profile whose server a check needs first (parity: the speculative one)."""
        if check.workload is not None:
            profile = self.workload_for(check.workload, target).profile
        else:
            profile = profiles_of(self.eval_for(check.eval, target))[0]
        return profile or self.default_profile

    def checks_for(self, target: Target | None) -> list[Check]:
        override = self.target_checks.get(target.name, {}) if target else {}
        return [override.get(n, c) for n, c in self.checks.items()]

    def profile_for(self, name: str, target: Target) -> Profile:
        """The profile as it runs on ``target``: target engine flags, then the suite's
        profile, then the suite's override for that target; a ``false`` flag removes it."""
        if name not in self.profiles:
            known = ", ".join(self.profiles)
            raise KeyError(f"suite {self.name!r} has no profile {name!r} (profiles: {known})")
        base = self.profiles[name]
        engine = self.engine_of(name)
        flags: dict[str, FlagValue] = dict(target.engine_flags.get(engine, {}))
        flags.update(base.flags)
        env = dict(target.env)
        env.update(target.thread_env)
        env.update(target.engine_env.get(engine, {}))
        env.update(base.env)
        override = self.target_profiles.get(target.name, {}).get(name)
        if override is not None:
            flags.update(override.flags)
            env.update(override.env)
        flags = {k: v for k, v in flags.items() if v is not False}
        return Profile(name, base.description, MappingProxyType(flags), MappingProxyType(env),
                       engine)

    def engine_of(self, profile: str) -> str:
        """The engine that serves ``profile``: its own ``engine`` key, else the suite's."""
        return self.profiles[profile].engine or self.engine

    @property
    def engines(self) -> tuple[str, ...]:
        """Every engine the suite's profiles use, the suite's own first."""
        used = dict.fromkeys([self.engine, *(self.engine_of(p) for p in self.profiles)])
        return tuple(used)

    def profiles_of(self, engine: str) -> list[str]:
        return [p for p in self.profiles if self.engine_of(p) == engine]


def _flags(table: Table) -> Mapping[str, FlagValue]:
    out: dict[str, FlagValue] = {}
    for name, value in table.raw().items():
        if name.startswith("-"):
            table.fail(name, f"write flags without the leading dashes: '{name.lstrip('-')}'")
        if not re.fullmatch(_FLAG, name):
            table.fail(name, "a flag name is lowercase letters, digits and dashes")
        if isinstance(value, list):
            if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                       for v in value):
                table.fail(name, f"a list flag takes strings or numbers, got {value!r}")
            out[name] = tuple(str(v) for v in value)
        elif isinstance(value, (bool, int, float, str)):
            out[name] = value
        else:
            table.fail(name, f"a flag value is a string, number, boolean or array, got {value!r}")
    return MappingProxyType(out)


def _env(table: Table) -> Mapping[str, str]:
    out: dict[str, str] = {}
    for name, value in table.raw().items():
        if not re.fullmatch(_ENV, name):
            table.fail(name, "not a valid environment variable name")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            table.fail(name, f"an environment value is a string or number, got {value!r}")
        out[name] = str(value)
    return MappingProxyType(out)


def _profile(name: str, t: Table, with_engine: bool = True) -> Profile:
    desc = t.string("description", "")
    # Per-target overrides change flags and env only: the engine is the profile's.
    engine = t.string("engine", None) if with_engine else None
    if engine is not None and engine not in ENGINES:
        t.fail("engine", f"{engine!r} is not a supported engine ({', '.join(ENGINES)})")
    flags = _flags(t.table("flags"))
    env = _env(t.table("env"))
    t.done()
    return Profile(name, desc, flags, env, engine)


def _model(t: Table, default: ModelSpec | None = None) -> ModelSpec:
    d = default
    spec = ModelSpec(
        id=t.string("id") if d is None else t.string("id", d.id),
        served_name=t.string("served_name", d.served_name if d else None) or "",
        path=t.string("path", d.path if d else None),
        path_env=t.string("path_env", d.path_env if d else None, pattern=_ENV),
        reference=t.string("reference", d.reference if d else None),
    )
    if not spec.served_name:
        spec = ModelSpec(spec.id, spec.id.rsplit("/", 1)[-1].lower(), spec.path,
                         spec.path_env, spec.reference)
    t.done()
    return spec


def _overrides(table: Table, what: str, known: Mapping[str, Any],
               parse: Callable[[str, Table], Any]) -> dict[str, Any]:
    """A target's partial overrides of named workloads or checks."""
    out = {}
    for name, sub in table.subtables():
        if name not in known:
            table.fail(name, f"overrides a {what} that does not exist "
                             f"({', '.join(known) or 'none'})")
        out[name] = parse(name, sub)
    table.done()
    return out


def parse_suite(file: Path, data: dict[str, Any]) -> Suite:
    root = Table(data, file)
    s = root.table("suite", required=True)
    name = s.string("name", file.parent.name, pattern=_NAME)
    description = s.string("description", "")
    engine = s.string("engine", "sglang")
    if engine not in ENGINES:
        s.fail("engine", f"{engine!r} is not a supported engine ({', '.join(ENGINES)})")
    targets = s.str_list("targets", tuple(TARGETS), choices=tuple(TARGETS))
    default_profile = s.string("default_profile", None)
    s.done()

    model = _model(root.table("model", required=True))

    profiles_t = root.table("profiles", required=True)
    profiles = {n: _profile(n, t) for n, t in profiles_t.subtables()}
    if not profiles:
        profiles_t.fail(None, "define at least one profile, e.g. [profiles.default]")
    for n in profiles:
        if not re.fullmatch(_NAME, n):
            profiles_t.fail(n, "a profile name is letters, digits, '_', '.' and '-'")
    if default_profile is None:
        default_profile = next(iter(profiles))
    elif default_profile not in profiles:
        s.fail("default_profile", f"{default_profile!r} is not a profile ({', '.join(profiles)})")

    workloads: dict[str, Workload] = {}
    wt = root.table("workloads")
    for wname, wtab in wt.subtables():
        workloads[wname] = parse_workload(wname, wtab)
        if workloads[wname].profile not in (None, *profiles):
            wtab.fail("profile", f"{workloads[wname].profile!r} is not a profile "
                                 f"({', '.join(profiles)})")
    evals: dict[str, Any] = {}
    for ename, etab in root.table("evals").subtables():
        evals[ename] = parse_eval(ename, etab)
        for p in profiles_of(evals[ename]):
            if p not in (None, *profiles):
                etab.fail("profile", f"{p!r} is not a profile ({', '.join(profiles)})")
    checks: dict[str, Check] = {}
    for cname, ctab in root.table("checks").subtables():
        checks[cname] = parse_check(cname, ctab, workloads, None, evals)

    target_models: dict[str, ModelSpec] = {}
    target_profiles: dict[str, dict[str, Profile]] = {}
    target_workloads: dict[str, dict[str, Workload]] = {}
    target_checks: dict[str, dict[str, Check]] = {}
    target_evals: dict[str, dict[str, Any]] = {}
    for tname, tt in root.table("targets").subtables():
        if tname not in TARGETS:
            root.fail(f"targets.{tname}", f"unknown target; targets: {', '.join(TARGETS)}")
        if "model" in tt.data:
            target_models[tname] = _model(tt.table("model"), model)
        per: dict[str, Profile] = {}
        pt = tt.table("profiles")
        for pname, ptab in pt.subtables():
            if pname not in profiles:
                pt.fail(pname, f"overrides a profile that does not exist ({', '.join(profiles)})")
            per[pname] = _profile(pname, ptab, with_engine=False)
        pt.done()
        target_profiles[tname] = per
        target_workloads[tname] = _overrides(
            tt.table("workloads"), "workload", workloads,
            lambda n, t: parse_workload(n, t, workloads[n]))
        target_evals[tname] = _overrides(
            tt.table("evals"), "evaluation", evals, lambda n, t: parse_eval(n, t, evals[n]))
        target_checks[tname] = _overrides(
            tt.table("checks"), "check", checks,
            lambda n, t: parse_check(n, t, workloads, checks[n], evals))
        tt.done()
    root.done()
    suite = Suite(
        name=name,
        file=file,
        description=description,
        engine=engine,
        targets=targets,
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
