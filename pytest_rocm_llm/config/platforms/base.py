"""What every platform provides (``Platform``), the VRAM reading they share (``GpuMemory``),
and running a node's tools through the engine's exec part (``first_answer``)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class GpuMemory:
    index: int
    used_mb: float
    total_mb: float

    @property
    def used_pct(self) -> float:
        return 100.0 * self.used_mb / self.total_mb if self.total_mb > 0 else 0.0

    def describe(self) -> str:
        return (f"GPU {self.index}: {self.used_pct:.0f}% VRAM in use "
                f"({self.used_mb / 1024:.1f} of {self.total_mb / 1024:.0f} GiB)")


class Platform(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def is_gpu(self) -> bool: ...
    @property
    def vendor(self) -> str: ...  # "AMD", "NVIDIA"; "" for the CPU reference
    @property
    def detect_tools(self) -> str: ...  # what the hardware check runs, in words
    @property
    def vram_tools(self) -> str: ...  # what reads VRAM, in words
    @property
    def holders_hint(self) -> str: ...  # how to find what holds a GPU
    @property
    def device_variables(self) -> tuple[str, ...]: ...  # what makes a GPU visible; first wins

    def container_args(self) -> tuple[str, ...]: ...

    def detect_archs(self, prefix: Sequence[str]) -> set[str] | None: ...

    def read_vram(self, prefix: Sequence[str]) -> list[GpuMemory] | None: ...


def first_answer(prefix: Sequence[str],
                 tools: Sequence[tuple[Sequence[str], Callable[[str], list[Any]]]]
                 ) -> list[Any] | None:
    """What the first of ``tools`` (argv, parser) that answers, run through ``prefix``,
    reports; None when none answered (not installed, failed, unparseable or empty)."""
    for argv, parse in tools:
        try:
            out = subprocess.run([*prefix, *argv], capture_output=True, text=True,
                                 timeout=60, check=False, stdin=subprocess.DEVNULL)
            found = parse(out.stdout) if out.returncode == 0 else []
        except (OSError, subprocess.TimeoutExpired, ValueError):
            continue
        if found:
            return found
    return None
