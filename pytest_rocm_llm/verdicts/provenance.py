"""Where a measurement came from: engine, flags, model, ROCm stack, image, host, date, commit,
and the kernel paths the server's log shows (attention, MoE, all-reduce, tuned-config hits).

The ROCm, driver and aiter versions are read inside the engine's own environment (through
its interpreter or command prefix, so a container's stack is what is recorded), once per
prefix; a field that cannot be read is None, never guessed.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import socket
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_rocm_llm.redact import redact_argv
from pytest_rocm_llm.serving.kernel_paths import kernel_paths
from pytest_rocm_llm.serving.tuned_tables import TABLE_VARS, tuned_tables
from pytest_rocm_llm.verdicts.verdict import flags_digest

_PROBE = r"""
import json, importlib.metadata as md
def ver(name):
    try:
        return md.version(name)
    except Exception:
        return None
def read(path):
    try:
        return open(path).read().strip() or None
    except OSError:
        return None
out = {"aiter_version": ver("aiter") or ver("amd-aiter"),
       "rocm_version": read("/opt/rocm/.info/version"),
       "driver_version": read("/sys/module/amdgpu/version")}
try:
    import torch
    out["torch_hip"] = getattr(torch.version, "hip", None)
except Exception:
    out["torch_hip"] = None
if out["rocm_version"] is None and out["torch_hip"]:
    out["rocm_version"] = "hip " + out["torch_hip"]
print(json.dumps(out))
"""


@functools.cache
def stack_versions(prefix: tuple[str, ...]) -> Mapping[str, str | None]:
    empty = {"aiter_version": None, "rocm_version": None, "driver_version": None}
    if not prefix:
        return empty
    try:
        proc = subprocess.run([*prefix, "-c", _PROBE], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        return empty
    return {k: data.get(k) for k in empty}


@functools.cache
def suite_commit(directory: Path) -> str | None:
    try:
        head = subprocess.run(["git", "-C", str(directory), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=30)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(directory), "status", "--porcelain", "--",
                                "."], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


# One read per server log (its path names the profile and port, so a relaunch is a new key):
# the evidence is fixed at the profile's first verdict, and a log that grows for hours is
# not re-read for each check that follows.
_KERNEL_PATHS: dict[Path, dict[str, Any]] = {}


def server_kernel_paths(log_path: Path | None) -> dict[str, Any] | None:
    """The kernel paths a server's log shows; None for a server without a readable log (an
    attached endpoint, a log already removed)."""
    if log_path is None:
        return None
    if log_path not in _KERNEL_PATHS:
        try:
            text = log_path.read_text(errors="replace")
        except OSError:
            return None
        _KERNEL_PATHS[log_path] = kernel_paths(text)
    return {k: list(v) if isinstance(v, list) else v for k, v in _KERNEL_PATHS[log_path].items()}


# One probe per server launch (its argv names its port): every verdict of a server records
# the tables it started with, without a container exec per check.
_TABLES: dict[tuple[str, ...], dict[str, dict[str, str | None]]] = {}


def server_tables(launch_argv: Sequence[str], env: Mapping[str, str]
                  ) -> dict[str, dict[str, str | None]]:
    key = (*launch_argv, *(env.get(name, "") for name in TABLE_VARS))
    if key not in _TABLES:
        _TABLES[key] = tuned_tables(env, engine_prefix(launch_argv))
    return _TABLES[key]


def engine_prefix(argv: Sequence[str]) -> tuple[str, ...]:
    """The interpreter / command prefix of a launch command line (what precedes ``-m``)."""
    argv = list(argv)
    return tuple(argv[:argv.index("-m")]) if "-m" in argv else ()


def collect(*, engine: str, engine_version: str, profile_argv: Sequence[str], model: str,
            launch_argv: Sequence[str], suite_dir: Path, container_image: str | None,
            local: bool, log_path: Path | None = None,
            env: Mapping[str, str] | None = None, image_id: str | None = None,
            image_digests: str | None = None) -> dict[str, Any]:
    """A measured entry's provenance. ``local``: the server was launched here (not attached),
    so its environment can be probed; ``log_path``: the server's log, read for the kernel
    paths it ran; ``env``: the server's whole environment, whose tuned kernel tables
    (AITER_CONFIG_FMOE) are recorded by path and sha256; ``image_id`` /
    ``image_digests``: the container image as the runtime knows it (set only for a build run
    from an image, so a native run's provenance is unchanged)."""
    stack = stack_versions(engine_prefix(launch_argv)) if local else {}
    tables = server_tables(launch_argv, env) if local and env else {}
    return {
        "kind": "measured",
        "date": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "source": None,
        "engine": engine,
        "engine_version": engine_version,
        # Credentials are not configuration: rotating a key must not change the digest, and
        # a short one must not be recoverable from it.
        "engine_flags_digest": flags_digest(redact_argv(profile_argv)),
        "model": model,
        "rocm_version": stack.get("rocm_version"),
        "driver_version": stack.get("driver_version"),
        "aiter_version": stack.get("aiter_version"),
        "container_image": container_image,
        **({"container_image_id": image_id} if image_id else {}),
        **({"container_image_digests": image_digests} if image_digests else {}),
        "host": socket.gethostname(),
        "suite_commit": suite_commit(suite_dir),
        "kernel_paths": server_kernel_paths(log_path),
        **({"tuned_tables": tables} if tables else {}),
    }
