"""Platforms: what kind of node a target is, one module each (cpu, rocm, cuda).

A platform knows how its GPUs are found and named (the hardware check), how VRAM in use is
read before a start, which variables make devices visible, what a server's container needs,
and whether the CPU reference's engine environment and ``sgl_kernel`` stub apply (only on
``cpu``). A target names its platform by ``kind``; a package adds one through the
``pytest_rocm_llm.platforms`` entry point group (an object with these attributes). Everything
runs through ``prefix``, the exec part of the engine's command, so it looks where the
engine will run.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import metadata

from pytest_rocm_llm.config.platforms.base import Platform
from pytest_rocm_llm.config.platforms.cpu import CPU
from pytest_rocm_llm.config.platforms.cuda import CUDA
from pytest_rocm_llm.config.platforms.rocm import ROCM
from pytest_rocm_llm.errors import ConfigError

ENTRY_POINTS = "pytest_rocm_llm.platforms"
BUILT_IN: tuple[Platform, ...] = (CPU, ROCM, CUDA)


# Once per process: every Target.is_gpu asks, and reading the entry points scans every
# installed distribution's metadata.
@functools.cache
def _registry() -> Mapping[str, Platform]:
    found: dict[str, Platform] = {p.kind: p for p in BUILT_IN}
    for ep in metadata.entry_points(group=ENTRY_POINTS):
        found.setdefault(ep.name, ep.load())
    return found


def platform(kind: str) -> Platform:
    known = _registry()
    if kind not in known:
        raise ConfigError(f"target kind {kind!r} is not a platform ({', '.join(known)}); a "
                          f"package adds one through the {ENTRY_POINTS!r} entry point group")
    return known[kind]
