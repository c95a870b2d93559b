"""A suite as data: its model, engine, named server profiles, workloads, checks and
evaluations, and their per-target overrides (config/suite.py reads suite.toml into these)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_rocm_llm.config.builds import CANDIDATE
from pytest_rocm_llm.config.checks import Check
from pytest_rocm_llm.config.evals import profiles_of
from pytest_rocm_llm.config.targets import FlagValue, Target
from pytest_rocm_llm.config.workload import Workload


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
    # ``[candidate.profiles.<p>]``: a paired run's candidate serves these over the profile
    # (a flag renamed between the builds: the old name = false, the new one set)
    candidate_profiles: Mapping[str, Profile] = field(default_factory=dict)

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
            # parse_check guarantees a check reads a workload or an evaluation
            profile = profiles_of(self.eval_for(check.eval or "", target))[0]
        return profile or self.default_profile

    def checks_for(self, target: Target | None) -> list[Check]:
        override = self.target_checks.get(target.name, {}) if target else {}
        return [override.get(n, c) for n, c in self.checks.items()]

    def profile_for(self, name: str, target: Target, build: str | None = None) -> Profile:
        """The profile as it runs on ``target``: target engine flags, then the suite's
        profile, then the suite's override for that target, then (``build`` the candidate)
        the candidate's overlay; a ``false`` flag removes it."""
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
        overlay = self.candidate_profiles.get(name) if build == CANDIDATE else None
        for over in (override, overlay):
            if over is not None:
                flags.update(over.flags)
                env.update(over.env)
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
