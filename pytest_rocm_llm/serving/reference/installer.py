"""The engine environments' installer: uv, fed the package sources pip would use.

Why uv and not pip: it installs the same requirement files with the same pins and the same
``--no-deps`` steps (same resolver inputs: the same indexes, find-links and constraints, read
from pip's own configuration below), but downloads and unpacks wheels in parallel and links
them into the environment from its cache instead of copying each file out of a zip.
Measured on 2 cores, same host and hour (README): sglang's environment 207 s -> 75 s, vLLM's
180 s -> 49 s, the same versions of every package (pip freeze of each pair compared).

uv does not read pip's configuration (pip.conf, PIP_* variables): without it uv would not
see a machine's local indexes or wheel directories, nor its constraint file (e.g. a
``torch<=2.14.1`` cap), and would resolve other versions than pip does.
"""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_rocm_llm.errors import InfrastructureError

# pip's option sections in the order pip applies them, later ones winning (pip's own
# ConfigOptionParser: [global], then the command's section, then PIP_* variables).
_SECTIONS = ("global", "install", ":env:")
# The options that decide which distributions pip sees, and the HTTP settings uv mirrors.
_KEYS = ("index-url", "extra-index-url", "find-links", "constraint", "no-index", "cert",
         "timeout", "default-timeout")


@dataclass(frozen=True)
class Sources:
    """uv's flags and environment for the package sources pip is configured with."""

    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)


def pip_options(config_list: str, environ: Mapping[str, str]) -> dict[str, str]:
    """pip's effective value of each option in _KEYS: ``config_list`` is the output of
    ``pip config list`` (lines ``section.key='value'``, its files and PIP_* variables
    already merged per section), ``environ`` the PIP_* variables (they win, as in pip)."""
    ranked: dict[str, tuple[int, str]] = {}
    for line in config_list.splitlines():
        key, sep, raw = line.partition("=")
        section, _, name = key.strip().rpartition(".")
        if not sep or name not in _KEYS or section not in _SECTIONS:
            continue
        try:
            value = ast.literal_eval(raw.strip())  # pip prints each value with %r
        except (ValueError, SyntaxError):
            value = raw.strip()
        rank = _SECTIONS.index(section)
        if name not in ranked or ranked[name][0] <= rank:
            ranked[name] = (rank, str(value))
    options = {name: value for name, (_, value) in ranked.items()}
    for name in _KEYS:
        env = environ.get("PIP_" + name.upper().replace("-", "_"))
        if env is not None:
            options[name] = env
    if "default-timeout" in options:  # one pip option (--timeout), two spellings
        options.setdefault("timeout", options.pop("default-timeout"))
    return options


def _true(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def uv_sources(options: Mapping[str, str]) -> Sources:
    """uv's flags for pip's ``options`` (see pip_options). ``unsafe-best-match``: pip takes
    the best version across all its indexes and links; uv by default stops at the first index
    that has the package at all (e.g. a local index's old release over PyPI's newer one)."""
    args = ["--index-strategy", "unsafe-best-match"]
    if _true(options.get("no-index", "0")):
        args.append("--no-index")
    if options.get("index-url"):
        args += ["--index-url", options["index-url"]]
    for flag, name in (("--extra-index-url", "extra-index-url"), ("--find-links", "find-links"),
                       ("--constraint", "constraint")):
        for value in options.get(name, "").split():  # pip splits these lists on whitespace
            args += [flag, value]
    env: dict[str, str] = {}
    if options.get("cert"):
        env["SSL_CERT_FILE"] = options["cert"]
    if options.get("timeout"):
        env["UV_HTTP_TIMEOUT"] = options["timeout"]
    return Sources(tuple(args), env)


def pip_config_list(python: str = sys.executable) -> str:
    """``pip config list`` of ``python`` (the interpreter the environments are made from, as
    pip's builds were), or "" when it has no pip: then only PIP_* variables apply."""
    try:
        done = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def pip_sources(python: str = sys.executable,
                environ: Mapping[str, str] | None = None) -> Sources:
    return uv_sources(pip_options(pip_config_list(python),
                                  os.environ if environ is None else environ))


# uv's find_uv_bin() reads sysconfig, whose first read is not thread-safe before Python 3.12:
# a second thread sees the half-filled table and get_config_var("EXE") is None (CI failed on
# it when the sglang and vLLM builds started side by side). Resolved once, under a lock.
_UV_BIN_LOCK = threading.Lock()


def uv_bin() -> str:
    with _UV_BIN_LOCK:
        return _uv_bin()


@functools.cache
def _uv_bin() -> str:
    try:
        from uv import find_uv_bin
    except ImportError as exc:
        raise InfrastructureError("the CPU reference is installed with uv, which is not "
                                  "installed: pip install uv") from exc
    try:
        return str(find_uv_bin())
    except FileNotFoundError as exc:
        raise InfrastructureError(f"uv's binary was not found: {exc}") from exc


def uv_env(uv_cache: Path, build_tmp: Path, sources: Sources) -> dict[str, str]:
    """uv's environment for one build: its cache ``uv_cache`` beside the environments and its
    temporary files in the build's own directory (both on the disk space_problem() checked,
    not in the user's home or a small /tmp), and pip's HTTP settings."""
    return {**sources.env, "UV_CACHE_DIR": str(uv_cache), "TMPDIR": str(build_tmp),
            "UV_NO_PROGRESS": "1"}


# hardlink: the environments' files are hard links to the unpacked wheels in uv's cache, so
# the cache keeps no second copy of them (and is kept: a rebuild after a requirements change
# links what it already has instead of downloading it again); where the cache and an
# environment are on different filesystems uv falls back to copying (with a warning) instead
# of failing. Measured on ext4 (torch 2.13.0 CPU from a warm cache): hardlink +6 MiB in
# 0.5 s, clone (uv's default on Linux) the same (no reflink on ext4), copy +746 MiB in 4 s.
LINK_MODE = "hardlink"


def uv_pip_install_argv(uv: str, python: Path, sources: Sources, args: list[str]) -> list[str]:
    return [uv, "pip", "install", "--python", str(python), "--link-mode", LINK_MODE,
            "--no-config", *sources.args, *args]


def uv_venv_argv(uv: str, env_dir: Path, base_python: str = sys.executable) -> list[str]:
    return [uv, "venv", "--clear", "--no-project", "--no-config", "--python", base_python,
            str(env_dir)]
