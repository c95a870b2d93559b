"""NVIDIA nodes (CUDA), the reference rows the seeds compare MI355X against (B200, H200):
GPUs named by compute capability (``sm_100`` for B200, ``sm_90`` for H200) and VRAM read with
one ``nvidia-smi`` query; containers get ``--gpus all`` (NVIDIA Container Toolkit), as
sglang's Docker instructions give it. Nothing from the CPU reference applies: no ``sgl_kernel``
stub, no embedded engine environment."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_rocm_llm.config.platforms.base import GpuMemory, first_answer

QUERY = ("nvidia-smi", "--query-gpu=index,name,compute_cap,memory.used,memory.total",
         "--format=csv,noheader,nounits")


def _rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in row] for row in csv.reader(io.StringIO(text)) if len(row) >= 5]


def parse_vram(text: str) -> list[GpuMemory]:
    """``nvidia-smi`` QUERY's lines: ``0, NVIDIA B200, 10.0, 1024, 183359`` (MiB)."""
    out = []
    for index, _name, _cap, used, total in (r[:5] for r in _rows(text)):
        try:
            out.append(GpuMemory(int(index), float(used), float(total)))
        except ValueError:
            continue  # "[N/A]" where a field is not supported
    return out


def parse_archs(text: str) -> list[str]:
    """Compute capabilities as sm names: ``10.0`` -> ``sm_100``, ``9.0`` -> ``sm_90``."""
    archs = set()
    for row in _rows(text):
        major, _, minor = row[2].partition(".")
        if major.isdigit() and minor.isdigit():
            archs.add(f"sm_{major}{minor}")
    return sorted(archs)


@dataclass(frozen=True)
class Cuda:
    kind: str = "cuda"
    is_gpu: bool = True
    vendor: str = "NVIDIA"
    detect_tools: str = "nvidia-smi"
    vram_tools: str = "nvidia-smi"
    holders_hint: str = "`nvidia-smi --query-compute-apps=pid,used_memory --format=csv`"
    device_variables: tuple[str, ...] = ("CUDA_VISIBLE_DEVICES",)

    def container_args(self) -> tuple[str, ...]:
        return ("--gpus", "all", "--ipc", "host", "--shm-size", "16g", "--network", "host")

    def detect_archs(self, prefix: Sequence[str]) -> set[str] | None:
        found = first_answer(prefix, ((QUERY, parse_archs),))
        return set(found) if found else None

    def read_vram(self, prefix: Sequence[str]) -> list[GpuMemory] | None:
        return first_answer(prefix, ((QUERY, parse_vram),))


CUDA = Cuda()
