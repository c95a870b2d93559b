"""Engine adapters: how to launch an engine, know it is ready, and check its flags.

An engine lives in its own environment (its pins clash with ours), so adapters only build
command lines and speak HTTP; they never import the engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..targets import FlagValue


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


class EngineError(Exception):
    """The engine environment is unusable (missing, wrong version, cannot import)."""


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

    def accept_length(self, base_url: str,
                      headers: Mapping[str, str] | None = None) -> float | None:
        """Average speculative accept length (tokens per verify step); None if the server
        does not speculate. Parity runs are judged only when it is > 1."""
        ...


def get_engine(name: str) -> Engine:
    if name == "sglang":
        from .sglang import SGLang

        return SGLang()
    if name == "vllm":
        from .vllm import VLLM

        return VLLM()
    raise KeyError(name)
