"""Platforms: what kind of node a target is, one module each (cpu, rocm, cuda).

A platform knows how its GPUs are found and named (the hardware check), how VRAM in use is
read before a start, which variables make devices visible, what a server's container needs,
and whether the CPU reference's engine environment and ``sgl_kernel`` stub apply (only on
``cpu``). A target names its platform by ``kind``; a package adds one through the
``pytest_rocm_llm.platforms`` entry point group (an object with these attributes), read by
the one registry mechanism every kind uses (pytest_rocm_llm/kinds.py). Everything
runs through ``prefix``, the exec part of the engine's command, so it looks where the
engine will run.
"""

from __future__ import annotations

from pytest_rocm_llm.config.platforms.base import Platform
from pytest_rocm_llm.kinds import Registry

PLATFORMS: Registry[Platform] = Registry("a platform", "pytest_rocm_llm.platforms", {
    "cpu": "pytest_rocm_llm.config.platforms.cpu:CPU",
    "rocm": "pytest_rocm_llm.config.platforms.rocm:ROCM",
    "cuda": "pytest_rocm_llm.config.platforms.cuda:CUDA"}, key="kind")


def platform(kind: str) -> Platform:
    return PLATFORMS.get(kind)
