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

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pytest_rocm_llm.config.platforms.base import GpuMemory, Platform
from pytest_rocm_llm.config.platforms.rocm import ROCM
from pytest_rocm_llm.errors import InfrastructureError

# A start that failed with one of these may have met memory still draining: retried once.
DRAIN_SIGNATURES = ("unbalanced-gpu-memory", "rccl-init-failure", "kv-cache-oom")
POLL_S = 5.0


class GpuMemoryHeld(InfrastructureError):
    """The GPUs a server needs stayed above the idle bound for the whole wait."""


def devices_of(env: Mapping[str, str], variables: Sequence[str]) -> set[int] | None:
    """The GPUs a server with this environment uses (None: all of them); ``variables``: the
    platform's, the first one set wins."""
    for name in variables:
        value = env.get(name, "").strip()
        if value:
            try:
                return {int(v) for v in value.split(",")}
            except ValueError:
                return None
    return None


def wait_until_idle(prefix: Sequence[str], devices: set[int] | None, limit_pct: float,
                    timeout_s: float, progress: Callable[[str], None], name: str,
                    plat: Platform = ROCM,
                    read: Callable[[Sequence[str]], list[GpuMemory] | None] | None = None,
                    sleep: Callable[[float], None] = time.sleep,
                    clock: Callable[[], float] = time.monotonic) -> list[GpuMemory] | None:
    """Wait until every GPU in ``devices`` is at or below ``limit_pct`` VRAM in use; the
    readings that allowed the start (None: nothing could read them, said once). Raises
    GpuMemoryHeld after ``timeout_s``, naming the GPUs still held."""
    read = read or plat.read_vram
    start = clock()
    said = False
    while True:
        gpus = read(prefix)
        if gpus is None:
            progress(f"[rocm-llm] {name}: GPU memory not checked before the start: neither "
                     f"{plat.vram_tools} answered where the engine runs")
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
                f"{plat.holders_hint} and stop it, or wait for it")
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
