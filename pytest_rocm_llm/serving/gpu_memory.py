"""GPU memory hygiene before a server starts on a GPU node. No pytest in here.

A server that starts while the previous one's memory is still being released fails in ways
that look like a broken build: RCCL init errors, sglang's "memory capacity is unbalanced", an
out-of-memory at KV-pool allocation. InferenceX's GLM-5.2 MI355X scripts wait up to 15 minutes
for every GPU at or below 10% VRAM before each job; sglang's CI has ``ensure_vram_clear``. So
before each start the GPUs the server will use are read where the engine runs (the build's
exec part: ``docker run --rm ... IMAGE`` or the host), waited for within a bound, and a GPU
still held then is an infrastructure failure naming it, never a verdict on the build. A start
that failed with one of the drain signatures is retried once (after the same wait): in a
paired run a drain that hits only the candidate's restart must not make the candidate look
broken.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_rocm_llm.errors import InfrastructureError

# What reads VRAM, in order: amd-smi (ROCm 6+), then rocm-smi (older images).
AMD_SMI = ("amd-smi", "metric", "--mem-usage", "--json")
ROCM_SMI = ("rocm-smi", "--showmeminfo", "vram", "--json")
# A start that failed with one of these may have met memory still draining: retried once.
DRAIN_SIGNATURES = ("unbalanced-gpu-memory", "rccl-init-failure", "kv-cache-oom")
DEVICE_VARIABLES = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
POLL_S = 5.0


class GpuMemoryHeld(InfrastructureError):
    """The GPUs a server needs stayed above the idle bound for the whole wait."""


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


def read_vram(prefix: Sequence[str] = ()) -> list[GpuMemory] | None:
    """Every GPU's VRAM use as the first tool that answers reports it, run through
    ``prefix`` (where the engine runs); None: no tool answered."""
    for tool, parse in ((AMD_SMI, parse_amd_smi), (ROCM_SMI, parse_rocm_smi)):
        try:
            out = subprocess.run([*prefix, *tool], capture_output=True, text=True,
                                 timeout=60, check=False)
            gpus = parse(out.stdout) if out.returncode == 0 else []
        except (OSError, subprocess.TimeoutExpired, ValueError):
            continue
        if gpus:
            return gpus
    return None


def devices_of(env: Mapping[str, str]) -> set[int] | None:
    """The GPUs a server with this environment uses (None: all of them)."""
    for name in DEVICE_VARIABLES:
        value = env.get(name, "").strip()
        if value:
            try:
                return {int(v) for v in value.split(",")}
            except ValueError:
                return None
    return None


def wait_until_idle(prefix: Sequence[str], devices: set[int] | None, limit_pct: float,
                    timeout_s: float, progress: Callable[[str], None], name: str,
                    read: Callable[[Sequence[str]], list[GpuMemory] | None] = read_vram,
                    sleep: Callable[[float], None] = time.sleep,
                    clock: Callable[[], float] = time.monotonic) -> list[GpuMemory] | None:
    """Wait until every GPU in ``devices`` is at or below ``limit_pct`` VRAM in use; the
    readings that allowed the start (None: nothing could read them, said once). Raises
    GpuMemoryHeld after ``timeout_s``, naming the GPUs still held."""
    start = clock()
    said = False
    while True:
        gpus = read(prefix)
        if gpus is None:
            progress(f"[rocm-llm] {name}: GPU memory not checked before the start: neither "
                     "amd-smi nor rocm-smi answered where the engine runs")
            return None
        held = [g for g in gpus if (devices is None or g.index in devices)
                and g.used_pct > limit_pct]
        if not held:
            if said:
                progress(f"[rocm-llm] {name}: GPU memory released after "
                         f"{clock() - start:.0f} s")
            return gpus
        waited = clock() - start
        if waited >= timeout_s:
            raise GpuMemoryHeld(
                f"{name}: not started: {len(held)} GPU(s) stayed above {limit_pct:g}% VRAM "
                f"in use for {waited:.0f} s ({'; '.join(g.describe() for g in held)}). "
                "Another process or a previous job's server holds them: find it with "
                "`amd-smi process` (or `rocm-smi --showpids`) and stop it, or wait for it")
        if not said:
            progress(f"[rocm-llm] {name}: waiting for GPU memory to be released (up to "
                     f"{timeout_s:.0f} s): {'; '.join(g.describe() for g in held)}")
            said = True
        sleep(POLL_S)


def drain_signature(log: Path | None, signatures_file: Path | None = None) -> str | None:
    """The id of the first drain signature a failed start's log shows, else None."""
    from pytest_rocm_llm.serving.signatures import load, scan_log

    for hit in scan_log(log, load(signatures_file)):
        if hit.signature.id in DRAIN_SIGNATURES:
            return hit.signature.id
    return None
