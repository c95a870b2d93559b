"""Tuned kernel tables a server finds by a path in its environment: located before any
launch, and hashed for provenance.

``AITER_CONFIG_FMOE`` names aiter's tuned fused-MoE table (ROCm/aiter aiter/jit/core.py:
one path replaces the bundled table, "a.csv:b.csv" merges several). A path that does not
exist is not an error to aiter: it falls back to its untuned heuristic for every shape, which
shows only as a throughput shortfall hours later (the fp4 MoE fallback of the published
GLM 5.2 run). So each path is checked in the engine's own environment (through its command
prefix: a container sees its own files) and its sha256 is recorded beside the measurement,
so two runs name the same table or say they did not.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence

TABLE_VARS = ("AITER_CONFIG_FMOE",)

_PROBE = r"""
import hashlib, json, sys
out = {}
for p in sys.argv[1:]:
    try:
        with open(p, "rb") as f:
            out[p] = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        out[p] = None
print(json.dumps(out))
"""


def table_paths(value: str | None) -> list[str]:
    return [p for p in (value or "").split(":") if p.strip()]


def _digests(prefix: tuple[str, ...], paths: tuple[str, ...]) -> Mapping[str, str | None]:
    """path -> sha256 (None: not a readable file), read where the engine runs."""
    if not prefix:
        return {p: _local_digest(p) for p in paths}
    try:
        proc = subprocess.run([*prefix, "-c", _PROBE, *paths], capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        return {p: data.get(p) for p in paths}
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        return {p: None for p in paths}


def _local_digest(path: str) -> str | None:
    import hashlib

    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def tuned_tables(env: Mapping[str, str], prefix: Sequence[str] = ()
                 ) -> dict[str, dict[str, str | None]]:
    """Each table variable set in ``env``: its paths with their sha256 (None: missing)."""
    return {name: dict(_digests(tuple(prefix), tuple(table_paths(env[name]))))
            for name in TABLE_VARS if env.get(name)}


def table_problem(env: Mapping[str, str], prefix: Sequence[str] = (),
                  where: str = "") -> str | None:
    """Why a table variable in ``env`` cannot be used, with the fix; None when each path it
    names is a readable file (or it is unset: the plan reports that apart)."""
    for name, digests in tuned_tables(env, prefix).items():
        missing = [p for p, digest in digests.items() if digest is None]
        if missing:
            return (f"{name}={env[name]}: {', '.join(missing)} is not a readable file"
                    f"{where}; aiter would silently fall back to untuned MoE kernels for "
                    f"every shape. Fix: export {name}=<your tuned CSV> (several merge as "
                    f"a.csv:b.csv), or unset {name} to use aiter's bundled tables")
    return None
