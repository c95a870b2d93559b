"""AMD Instinct nodes (ROCm): GPUs named by gfx architecture (rocminfo, else amd-smi), VRAM
read by amd-smi (ROCm 6+) else rocm-smi, containers given ``/dev/kfd`` and ``/dev/dri`` as
sglang's ROCm instructions give them."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_rocm_llm.config.platforms.base import GpuMemory, first_answer

AMD_SMI = ("amd-smi", "metric", "--mem-usage", "--json")
ROCM_SMI = ("rocm-smi", "--showmeminfo", "vram", "--json")
_GFX = re.compile(r"\bgfx[0-9a-f]{3,4}\b")


def _number(value: object) -> float | None:
    if isinstance(value, dict):
        value = value.get("value")
    try:
        return float(str(value).split()[0])
    except (TypeError, ValueError, IndexError):
        return None


def parse_amd_smi(text: str) -> list[GpuMemory]:
    """``amd-smi metric --mem-usage --json``: a list of GPUs (or ``{"gpu_data": [...]}``,
    by version), each ``{"gpu": i, "mem_usage": {"total_vram": {"value", "unit"}, ...}}``."""
    data = json.loads(text)
    gpus = data.get("gpu_data", []) if isinstance(data, dict) else data
    out = []
    for n, gpu in enumerate(gpus if isinstance(gpus, list) else []):
        usage = gpu.get("mem_usage", {}) if isinstance(gpu, dict) else {}
        total, used = _number(usage.get("total_vram")), _number(usage.get("used_vram"))
        if total is not None and used is not None:
            out.append(GpuMemory(int(gpu.get("gpu", n)), used, total))
    return out


def parse_rocm_smi(text: str) -> list[GpuMemory]:
    """``rocm-smi --showmeminfo vram --json``: ``{"card0": {"VRAM Total Memory (B)": ...,
    "VRAM Total Used Memory (B)": ...}, ...}``."""
    data = json.loads(text)
    out = []
    for card, fields in (data.items() if isinstance(data, dict) else ()):
        if not card.startswith("card") or not isinstance(fields, dict):
            continue
        total = _number(fields.get("VRAM Total Memory (B)"))
        used = _number(fields.get("VRAM Total Used Memory (B)"))
        if total is not None and used is not None:
            out.append(GpuMemory(int(card[4:]), used / 2**20, total / 2**20))
    return out


def _gfx_names(text: str) -> list[str]:
    # rocminfo lists the CPU agent too (no gfx name); a GPU node has at least one.
    return sorted(set(_GFX.findall(text)))


@dataclass(frozen=True)
class Rocm:
    kind: str = "rocm"
    is_gpu: bool = True
    vendor: str = "AMD"
    detect_tools: str = "rocminfo nor amd-smi"
    vram_tools: str = "amd-smi nor rocm-smi"
    holders_hint: str = "`amd-smi process` (or `rocm-smi --showpids`)"
    device_variables: tuple[str, ...] = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                         "CUDA_VISIBLE_DEVICES")

    def container_args(self) -> tuple[str, ...]:
        return ("--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video",
                "--ipc", "host", "--shm-size", "16g", "--network", "host",
                "--security-opt", "seccomp=unconfined")

    def detect_archs(self, prefix: Sequence[str]) -> set[str] | None:
        found = first_answer(prefix, ((("rocminfo",), _gfx_names),
                                      (("amd-smi", "static", "--asic"), _gfx_names)))
        return set(found) if found else None

    def read_vram(self, prefix: Sequence[str]) -> list[GpuMemory] | None:
        return first_answer(prefix, ((AMD_SMI, parse_amd_smi), (ROCM_SMI, parse_rocm_smi)))


ROCM = Rocm()
