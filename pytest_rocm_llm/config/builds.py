"""The builds a run serves: the baseline (today's engine options) and, for a paired run, a
candidate, resolved once from the settings. No pytest in here.

A candidate is another engine install (``--llm-candidate-python`` / ``--llm-candidate-cmd``)
or a configuration change on the baseline's install (``--llm-candidate-env KEY=VAL``,
``--llm-candidate-flags "..."``), or both. Its flags are appended to every profile's launch
line, after the profile's own, so a flag both set is the candidate's (argparse keeps the last).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pytest_rocm_llm.errors import ConfigError

BASELINE = "baseline"
CANDIDATE = "candidate"
INCONCLUSIVE_CHOICES = ("fail", "pass")


@dataclass(frozen=True)
class Build:
    name: str  # BASELINE or CANDIDATE
    engine_prefix: tuple[str, ...] | None = None  # None: the target's default engine
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    flags: tuple[str, ...] = ()

    @property
    def exec_part(self) -> tuple[str, ...]:
        """What runs a command where this build's engine runs (``docker exec CTR`` of
        ``docker exec CTR python3``; nothing for a local interpreter): the hardware check
        runs rocminfo through it, never through the interpreter."""
        return split_engine_command(self.engine_prefix or ())[0]

    def describe(self) -> str:
        parts = []
        if self.engine_prefix is not None:
            parts.append(f"engine `{' '.join(self.engine_prefix)}`")
        if self.env:
            parts.append("env " + " ".join(f"{k}={v}" for k, v in self.env.items()))
        if self.flags:
            parts.append("flags " + " ".join(self.flags))
        return f"{self.name}: " + (", ".join(parts) if parts else "the engine options given")


def split_engine_command(prefix: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """(exec part, interpreter) of an engine command prefix: its last word is the
    interpreter (``--llm-engine-cmd`` names "a command prefix that runs the engine's Python"),
    what precedes it runs commands in the engine's world."""
    if not prefix:
        return (), None
    return tuple(prefix[:-1]), prefix[-1]


def parse_env_pairs(values: Any) -> Mapping[str, str]:
    """``KEY=VAL`` words (a list from a repeated option, or one string of them)."""
    if values in (None, "", []):
        return MappingProxyType({})
    # One pair per occurrence of the option (its value may hold spaces); a single string
    # (a programmatic caller's) is split as a shell would.
    pairs: Iterable[str] = shlex.split(values) if isinstance(values, str) else values
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = str(pair).partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ConfigError(f"--llm-candidate-env: invalid value {pair!r}; expected "
                              "KEY=VALUE, e.g. OMP_NUM_THREADS=1")
        out[key] = value
    return MappingProxyType(out)


def parse_flags(value: Any) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    try:
        words = tuple(shlex.split(str(value)))
    except ValueError as exc:
        raise ConfigError(f"--llm-candidate-flags: invalid value {value!r}; cannot split it "
                          f"as a shell command line: {exc}") from None
    if words and not words[0].startswith("--"):
        raise ConfigError(f"--llm-candidate-flags: invalid value {value!r}; expected engine "
                          "flags, e.g. '--dtype float32'")
    return words


def parse_pair_trials(value: Any) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1 or n > 64:
        raise ConfigError(f"--llm-pair-trials: invalid value {value!r}; expected trials per "
                          "build, 1-64 (2: A-B-B-A)")
    return n


def parse_inconclusive(value: Any) -> str:
    text = str(value).strip().lower()
    if text not in INCONCLUSIVE_CHOICES:
        raise ConfigError(f"--llm-inconclusive: invalid value {value!r}; accepted: "
                          f"{', '.join(INCONCLUSIVE_CHOICES)}")
    return text


def candidate_of(prefix: tuple[str, ...] | None, env: Mapping[str, str],
                 flags: tuple[str, ...], baseline_prefix: tuple[str, ...] | None
                 ) -> Build | None:
    """The candidate build, or None when no candidate option was given. Without an engine of
    its own, it runs on the baseline's install."""
    if prefix is None and not env and not flags:
        return None
    return Build(CANDIDATE, prefix if prefix is not None else baseline_prefix, env, flags)
