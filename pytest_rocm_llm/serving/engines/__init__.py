"""Engine adapters: how to launch an engine, know it is ready, and check its flags.

An engine lives in its own environment (its pins clash with ours), so adapters only build
command lines and speak HTTP; they never import the engine.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pytest_rocm_llm.config.targets import FlagValue
from pytest_rocm_llm.errors import InfrastructureError
from pytest_rocm_llm.log_tail import text_tail
from pytest_rocm_llm.redact import redact_argv
from pytest_rocm_llm.serving.engines import flag_cache
from pytest_rocm_llm.serving.engines.flag_script import FLAGCHECK_MARK

if TYPE_CHECKING:
    from pytest_rocm_llm.serving.speculation import SpecCounters


def flags_to_argv(flags: Mapping[str, FlagValue]) -> list[str]:
    """``{"tp-size": 8, "enable-x": True, "cuda-graph-bs": ("1", "2")}`` -> argv words."""
    argv: list[str] = []
    for name, value in flags.items():
        if value is False:
            continue
        argv.append(f"--{name}")
        if value is True:
            continue
        if isinstance(value, tuple):
            argv.extend(value)
        else:
            argv.append(str(value))
    return argv


@dataclass(frozen=True)
class FlagCheck:
    """The engine's own parser's verdict on one profile's command line."""

    profile: str
    ok: bool
    message: str = ""
    unknown: tuple[str, ...] = ()
    # the verdict of an earlier run of the same check in the same immutable environment
    # (engines/flag_cache.py), not of a parser started now
    kept: bool = False


class EngineError(InfrastructureError):
    """The engine environment is unusable (missing, wrong version, cannot import)."""




def run_flag_check(prefix: Sequence[str], script: str, profiles: Mapping[str, list[str]],
                   env: Mapping[str, str] | None, timeout_s: float, label: str,
                   module: str) -> tuple[str, list[FlagCheck]]:
    """Run an engine's own argument parser (``script``, inside the engine environment) over
    every profile's argv; ``label`` names the engine in messages, ``module`` what must be
    importable. Raises EngineError when the engine cannot be run."""
    # The parser gets the argv with credentials masked: a command line is visible to every
    # user of the node (ps), and whether a flag parses never depends on a secret's value
    # (stdin would hide it too, but `docker exec` without -i forwards no stdin).
    masked = {name: redact_argv(argv) for name, argv in profiles.items()}
    entries = {name: flag_cache.entry_path(prefix, script, argv, env)
               for name, argv in masked.items()}
    kept = {name: data for name, path in entries.items()
            if (data := flag_cache.load(path)) is not None}
    missing = {name: argv for name, argv in masked.items() if name not in kept}
    if kept and not missing:
        return (next(iter(kept.values()))["version"],
                [_kept_check(name, kept[name]) for name in masked])
    version, ran = _run_parser(prefix, script, missing, env, timeout_s, label, module)
    for name, result in ran.items():
        flag_cache.store(entries[name], version, result)
    checks = [_kept_check(name, kept[name]) if name in kept
              else FlagCheck(name, ran[name]["ok"], ran[name]["message"],
                             tuple(ran[name]["unknown"]))
              for name in masked]
    return version, checks


def _kept_check(name: str, data: dict) -> FlagCheck:
    r = data["result"]
    return FlagCheck(name, r["ok"], r["message"], tuple(r["unknown"]), kept=True)


def _run_parser(prefix: Sequence[str], script: str, masked: Mapping[str, list[str]],
                env: Mapping[str, str] | None, timeout_s: float, label: str,
                module: str) -> tuple[str, dict[str, dict]]:
    """One start of the engine's parser over ``masked``: its version and each result."""
    argv = [*prefix, "-c", script, json.dumps(masked)]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                             env={**os.environ, **(env or {})}, check=False)
    except FileNotFoundError:
        raise EngineError(f"engine interpreter {prefix[0]!r} not found") from None
    except subprocess.TimeoutExpired:
        raise EngineError(f"{label}'s argument parser did not answer in {timeout_s:.0f} s "
                          f"(engine: {' '.join(prefix)})") from None
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith(FLAGCHECK_MARK)), None)
    if line is None:
        tail = text_tail(out.stderr or out.stdout)
        raise EngineError(f"could not run {label}'s argument parser with {' '.join(prefix)} "
                          f"(exit {out.returncode}):\n{tail}")
    data = json.loads(line[len(FLAGCHECK_MARK):])
    if "import_error" in data:
        raise EngineError(f"{module} is not importable by {' '.join(prefix)}: "
                          f"{data['import_error']}; point --llm-engine-python or "
                          f"--llm-engine-cmd at the {label} environment")
    return data["version"], dict(data["results"])


class Engine(Protocol):
    name: str
    health_path: str

    def launch_argv(self, prefix: Sequence[str], model_path: str, served_name: str,
                    host: str, port: int, flags: Mapping[str, FlagValue]) -> list[str]: ...

    def base_args(self, model_path: str, served_name: str, host: str,
                  port: int) -> list[str]: ...

    def check_flags(self, prefix: Sequence[str], profiles: Mapping[str, list[str]],
                    env: Mapping[str, str] | None = None,
                    timeout_s: float = 300.0) -> tuple[str, list[FlagCheck]]: ...

    def server_info(self, base_url: str, headers: Mapping[str, str] | None = None) -> dict: ...

    def spec_counters(self, base_url: str,
                      headers: Mapping[str, str] | None = None) -> SpecCounters | None:
        """Speculative counters since start; None when the engine reports speculation per
        request or not at all. Only the difference of two readings describes a run."""
        ...


class ServerModule:
    """What every engine adapter shares: a server launched as ``python -m <module>`` with
    the model, served name, host and port as flags, and its flags checked by the engine's
    own parser (``check_script``, run inside its environment). Subclasses name the parts."""

    name: str
    label: str  # the engine's name in messages
    launch_module: str
    model_flag: str
    check_script: str

    def launch_argv(self, prefix: Sequence[str], model_path: str, served_name: str,
                    host: str, port: int, flags: Mapping[str, FlagValue]) -> list[str]:
        return [*prefix, "-m", self.launch_module,
                *self.base_args(model_path, served_name, host, port), *flags_to_argv(flags)]

    def base_args(self, model_path: str, served_name: str, host: str, port: int) -> list[str]:
        return [self.model_flag, model_path, "--served-model-name", served_name,
                "--host", host, "--port", str(port)]

    def check_flags(self, prefix: Sequence[str], profiles: Mapping[str, list[str]],
                    env: Mapping[str, str] | None = None,
                    timeout_s: float = 300.0) -> tuple[str, list[FlagCheck]]:
        """Parse every profile's argv with the installed engine's parser. Returns the
        engine's version and one verdict per profile; raises EngineError if the engine
        cannot be run."""
        return run_flag_check(prefix, self.check_script, profiles, env, timeout_s, self.label,
                              self.name)


def get_engine(name: str) -> Engine:
    """The adapter of the engine a suite names (config/suite.py ENGINES, open to other
    packages through the ``pytest_rocm_llm.engines`` entry point group)."""
    from pytest_rocm_llm.config.suite import ENGINES

    engine: Engine = ENGINES.get(name)
    return engine
