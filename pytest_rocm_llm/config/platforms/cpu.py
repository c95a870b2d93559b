"""The CPU reference's platform: no GPU to find or wait for, the embedded engine environments
and the ``sgl_kernel`` stub (serving/reference/)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_rocm_llm.config.platforms.base import GpuMemory


@dataclass(frozen=True)
class Cpu:
    kind: str = "cpu"
    is_gpu: bool = False
    vendor: str = ""
    detect_tools: str = ""
    vram_tools: str = ""
    holders_hint: str = ""
    device_variables: tuple[str, ...] = ()

    def container_args(self) -> tuple[str, ...]:
        return ("--network", "host")  # the server's port is the host's, no bridge needed

    def detect_archs(self, prefix: Sequence[str]) -> set[str] | None:
        return None

    def read_vram(self, prefix: Sequence[str]) -> list[GpuMemory] | None:
        return None


CPU = Cpu()
