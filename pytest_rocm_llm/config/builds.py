"""The builds a run serves: the baseline (today's engine options) and, for a paired run, a
candidate, resolved once from the settings. No pytest in here.

A candidate is another engine install (``--llm-candidate-python`` / ``--llm-candidate-cmd``)
or a configuration change on the incumbent's install (``--llm-candidate-env KEY=VAL``,
``--llm-candidate-flags "..."``), or both. Its flags are appended to every profile's launch
line, after the profile's own, so a flag both set is the candidate's (argparse keeps the last).
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_rocm_llm.errors import ConfigError

INCUMBENT = "incumbent"
CANDIDATE = "candidate"
INCONCLUSIVE_CHOICES = ("fail", "pass")
# Paired trials per build: the minimum before the first look (--llm-pair-trials) and the
# largest budget (--llm-pair-budget; its default follows the target's trial CV).
DEFAULT_PAIR_TRIALS = 4
MAX_PAIR_TRIALS = 64


@dataclass(frozen=True)
class Build:
    name: str  # INCUMBENT or CANDIDATE
    engine_prefix: tuple[str, ...] | None = None  # None: the target's default engine
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    flags: tuple[str, ...] = ()
    image: str | None = None  # each server in a container of its own (serving/container.py)

    @property
    def exec_part(self) -> tuple[str, ...]:
        """What runs a command where this build's engine runs (``docker exec CTR`` of
        ``docker exec CTR python3``; nothing for a local interpreter): the hardware check
        runs rocminfo through it, never through the interpreter."""
        return split_engine_command(self.engine_prefix or ())[0]

    def describe(self) -> str:
        parts = []
        if self.image is not None:
            parts.append(f"image {self.image}")
        if self.engine_prefix is not None:
            parts.append(f"engine `{' '.join(self.engine_prefix)}`")
        if self.env:
            parts.append("env " + " ".join(f"{k}={v}" for k, v in self.env.items()))
        if self.flags:
            parts.append("flags " + " ".join(self.flags))
        return f"{self.name}: " + (", ".join(parts) if parts else "the engine options given")


def parse_engine(python: Any, cmd: Any, flags: tuple[str, str] = (
        "--llm-engine-python", "--llm-engine-cmd"), image: str | None = None
                 ) -> tuple[str, ...] | None:
    """The engine's command prefix from an interpreter or a command; ``flags`` names the two
    options in messages (the candidate build's are validated the same way). With an
    ``image`` the interpreter is a path inside it, taken as given."""
    py_flag, cmd_flag = flags
    if image is not None:
        if cmd:
            raise ConfigError(f"{cmd_flag} and {cmd_flag.replace('-cmd', '-image')} both "
                              f"given; pass one (with an image, {py_flag} names the "
                              "interpreter inside it)")
        return (str(python),) if python else None
    if python and cmd:
        raise ConfigError(
            f"{py_flag} and {cmd_flag} both given; pass one: the interpreter "
            "of the engine environment, or a command prefix that runs it"
        )
    if python:
        path = Path(str(python)).expanduser()
        found = shutil.which(str(path))
        if found is None:
            raise _bad_value(py_flag, str(python),
                       "expected the path of an executable Python in the engine's environment")
        return (found,)
    if cmd:
        try:
            prefix = tuple(shlex.split(str(cmd)))
        except ValueError as exc:
            raise _bad_value(cmd_flag, cmd,
                       f"cannot split it as a shell command: {exc}") from None
        if not prefix:
            raise _bad_value(cmd_flag, cmd, "expected a command, e.g. 'ssh node0 python3'")
        refuse_exec_prefix(prefix, cmd_flag)
        if shutil.which(prefix[0]) is None:
            raise _bad_value(cmd_flag, cmd, f"{prefix[0]!r} is not an executable on PATH")
        return prefix
    return None


def refuse_exec_prefix(prefix: tuple[str, ...], cmd_flag: str) -> None:
    """A ``docker exec`` / ``podman exec`` prefix is refused: killing the exec client leaves
    the engine running inside the container (docker/cli#5309, moby/moby#9098), so no stop
    could be verified, and the profile's environment would reach it only as ``-e`` words."""
    for i, word in enumerate(prefix[:-1]):
        rest = prefix[i + 1:i + 3]
        if Path(word).name in ("docker", "podman") and (
                rest[:1] == ("exec",) or rest == ("container", "exec")):
            image_flag = cmd_flag.replace("-cmd", "-image")
            raise ConfigError(
                f"{cmd_flag}: a '{Path(word).name} exec' prefix is refused (stopping the exec "
                f"client leaves the engine running in the container); pass {image_flag} "
                "IMAGE to run each server in a container of its own")


def _bad_value(flag: str, value: Any, accepted: str) -> ConfigError:
    return ConfigError(f"{flag}: invalid value {value!r}; {accepted}")


RUNTIMES = ("docker", "podman")


def parse_runtime(value: Any) -> str:
    """The container runtime: the one named, else the first of RUNTIMES on PATH."""
    if value in (None, ""):
        found = next((r for r in RUNTIMES if shutil.which(r)), None)
        if found is None:
            raise ConfigError("--llm-engine-image/--llm-candidate-image: neither docker nor "
                              "podman is on PATH; install one or pass --llm-container-runtime")
        return found
    name = str(value).strip()
    if name not in RUNTIMES:
        raise _bad_value("--llm-container-runtime", value, f"accepted: {', '.join(RUNTIMES)}")
    if shutil.which(name) is None:
        raise _bad_value("--llm-container-runtime", value, f"{name!r} is not on PATH")
    return name


def parse_container_args(values: Any) -> tuple[str, ...]:
    """``--llm-container-arg`` words: one per occurrence, or one string (ini, environment)
    split as a shell would."""
    if values in (None, "", []):
        return ()
    if isinstance(values, str):
        return tuple(shlex.split(values))
    return tuple(str(v) for v in values)


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


def parse_pair_trials(value: Any, flag: str = "--llm-pair-trials") -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1 or n > MAX_PAIR_TRIALS:
        raise ConfigError(f"{flag}: invalid value {value!r}; expected trials per build, "
                          f"1-{MAX_PAIR_TRIALS}, run in whole A-B-B-A blocks of 2 (an odd "
                          "count is rounded up)")
    return n


def parse_pair_budget(value: Any, minimum: int) -> int | None:
    """The most trials per build (None: the target's default); never below the minimum."""
    if value in (None, ""):
        return None
    n = parse_pair_trials(value, "--llm-pair-budget")
    if n < minimum:
        raise ConfigError(f"--llm-pair-budget: invalid value {value!r}; it is the most trials "
                          f"per build and --llm-pair-trials (the least) is {minimum}: give a "
                          f"budget of at least {minimum}")
    return n


def parse_inconclusive(value: Any) -> str:
    text = str(value).strip().lower()
    if text not in INCONCLUSIVE_CHOICES:
        raise ConfigError(f"--llm-inconclusive: invalid value {value!r}; accepted: "
                          f"{', '.join(INCONCLUSIVE_CHOICES)}")
    return text


def candidate_of(prefix: tuple[str, ...] | None, env: Mapping[str, str],
                 flags: tuple[str, ...], incumbent_prefix: tuple[str, ...] | None,
                 image: str | None = None, incumbent_image: str | None = None
                 ) -> Build | None:
    """The candidate build, or None when no candidate option was given. Without an engine of
    its own (interpreter, command or image), it runs on the incumbent's install."""
    if prefix is None and image is None and not env and not flags:
        return None
    if prefix is None and image is None:
        prefix, image = incumbent_prefix, incumbent_image
    return Build(CANDIDATE, prefix, env, flags, image)
