"""The versions that make a build: engine, torch, ROCm (torch's HIP) or CUDA (torch's), aiter,
triton, read from the build's own interpreter (it is never imported here). No pytest in
here."""

from __future__ import annotations

import functools
import json
import subprocess

_PROBE = r"""
import json
from importlib import metadata
out = {}
for name in ("sglang", "vllm", "torch", "aiter", "triton"):
    try:
        out[name] = metadata.version(name)
    except Exception:
        out[name] = None
try:
    import torch
    out["rocm"] = getattr(torch.version, "hip", None)
    out["cuda"] = getattr(torch.version, "cuda", None)
except Exception:
    out["rocm"] = out["cuda"] = None
print(json.dumps(out))
"""


@functools.cache
def build_versions(prefix: tuple[str, ...]) -> dict[str, str]:
    """{package: version} of what the interpreter at ``prefix`` has (absent ones left out);
    empty when it cannot be run."""
    if not prefix:
        return {}
    try:
        proc = subprocess.run([*prefix, "-c", _PROBE], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        return {}
    return {k: str(v) for k, v in data.items() if v}
