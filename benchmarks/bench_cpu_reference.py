"""What the CPU reference costs, before and after its idle and thread settings, side by side.

For each engine recipe variant ("before": the recipe without idle sleeping and thread sizing;
"after": the cpu target as it ships), on real servers of suites/smoke:
  1. idle CPU of the server's whole process tree (cores busy while nothing is served);
  2. decode speed (the suite's ``decode`` workload, Artificial Analysis output speed) on quiet
     cores and with one core kept busy by another process, and their ratio (target >= 0.5);
  3. TTFT of the first request after an idle pause against a warm one (a sleeping scheduler
     must not add latency to the request that wakes it).
Then, optionally, the smoke suite end to end with its wall time by phase (provisioning, each
server's start and stop, each workload and evaluation), read from its results file.

    python benchmarks/bench_cpu_reference.py [--idle-s 20] [--suite] [--variants before,after]
    python benchmarks/bench_cpu_reference.py --quick   # seconds: resolves everything, no engine

``--quick`` is what CI runs: it resolves the suite, its profiles and workloads, builds every
variant's command line and environment, and runs the measuring code on stand-in processes, so
a renamed profile, workload or option breaks CI instead of this benchmark.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_rocm_llm.config.settings import Settings  # noqa: E402
from pytest_rocm_llm.config.suite import Suite, load_suite  # noqa: E402
from pytest_rocm_llm.config.targets import TARGETS, Target  # noqa: E402
from pytest_rocm_llm.performance.prompts import load_vocabulary  # noqa: E402
from pytest_rocm_llm.performance.workloads import run_workload  # noqa: E402
from pytest_rocm_llm.serving.pool import ServerPool  # noqa: E402
from pytest_rocm_llm.serving.server import LLMServer  # noqa: E402

SUITE = ROOT / "suites/smoke/suite.toml"
PROFILES = {"sglang": "reference", "vllm": "spec-reference"}
WORKLOAD = "decode"
# "before" is the cpu recipe as it was before idle sleeping and thread settings (commit
# 1b90f15): no idle flag, spinning OpenMP threads, vLLM's threads pinned to cores 0-1.
IDLE_FLAGS = ("sleep-on-idle",)
BEFORE_THREAD_ENV: dict[str, dict[str, str]] = {"vllm": {"VLLM_CPU_OMP_THREADS_BIND": "0-1"}}


def _without(d: Mapping[str, object], keys: tuple[str, ...]) -> dict[str, object]:
    return {k: v for k, v in d.items() if k not in keys}


def before_target(target: Target) -> Target:
    """The cpu target as it was before its idle and thread settings."""
    flags = {e: MappingProxyType(_without(f, IDLE_FLAGS))
             for e, f in target.engine_flags.items()}
    envs = {e: MappingProxyType({**env, **BEFORE_THREAD_ENV.get(e, {})})
            for e, env in target.engine_env.items()}
    return dataclasses.replace(target, engine_flags=MappingProxyType(flags),
                               engine_env=MappingProxyType(envs),
                               thread_env=MappingProxyType({}))


VARIANTS: dict[str, Callable[[Target], Target]] = {
    "before": before_target,
    "after": lambda t: t,
}


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and all its descendants, now."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def idle_cores(pid: int, seconds: float) -> float:
    """Cores the process tree keeps busy over ``seconds`` (1.0 = one whole core)."""
    c0, t0 = tree_cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (tree_cpu_seconds(pid) - c0) / (time.monotonic() - t0)


@contextmanager
def busy_core(code: str = "while True: pass") -> Iterator[subprocess.Popen[bytes]]:
    """Another process keeping one core busy (the noisy neighbour of a shared CI host)."""
    # Measured after 0.5 s, so the interpreter's own start-up is not counted as its load.
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(0.5)
        yield proc
    finally:
        proc.kill()
        proc.wait()


def settings_for(target: Target, cache: Path) -> Settings:
    return Settings(target, None, None, None, 900.0, False, None, "127.0.0.1", cache)


def decode_speed(server: LLMServer, suite: Suite, target: Target, requests: int) -> float:
    # More requests than the suite's own decode check: one request's speed moves by tens of
    # percent on a shared host, and this compares settings, not builds.
    w = dataclasses.replace(suite.workload_for(WORKLOAD, target), requests=requests)
    if server.engine != "sglang":  # the same prompts through the API both engines speak
        w = dataclasses.replace(w, api="completions")
    result = run_workload(server.base_url, server.served_model_name,
                          load_vocabulary(server.model_path), w, lambda _m: None,
                          watch=server.check_alive)
    return float(result.metrics["output_speed_tok_s"])


def ttft_s(server: LLMServer) -> float:
    """Seconds to the first streamed chunk of a short request (OpenAI completions: both
    engines speak it)."""
    body = {"model": server.served_model_name, "prompt": "The ocean is", "max_tokens": 4,
            "temperature": 0.0, "stream": True}
    t0 = time.perf_counter()
    with httpx.stream("POST", server.base_url + "/v1/completions", json=body,
                      timeout=300) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("data:") and '"text"' in line:
                return time.perf_counter() - t0
    raise RuntimeError(f"{server.profile}: no token streamed")


def measure(variant: str, engine: str, suite: Suite, cache: Path, idle_s: float,
            decode: bool, requests: int = 8) -> dict[str, float]:
    target = VARIANTS[variant](TARGETS["cpu"])
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as logs:
        pool = ServerPool(settings_for(target, cache), Path(logs), lambda m: None)
        try:
            t0 = time.monotonic()
            server = pool.get(suite, PROFILES[engine])
            out["start_s"] = time.monotonic() - t0
            assert server.process is not None and server.process.pid is not None
            time.sleep(3)  # let start-up work (warm-up request, GC) settle
            out["idle_cores"] = idle_cores(server.process.pid, idle_s)
            out["ttft_after_pause_s"] = ttft_s(server)  # the request that wakes it
            out["ttft_warm_s"] = min(ttft_s(server) for _ in range(3))
            if decode:
                out["decode_quiet"] = decode_speed(server, suite, target, requests)
                with busy_core():
                    out["decode_busy"] = decode_speed(server, suite, target, requests)
                out["busy_over_quiet"] = out["decode_busy"] / out["decode_quiet"]
        finally:
            pool.stop_all()
    return out


def smoke_phases(cache: Path) -> tuple[float, list[dict]]:
    """The smoke suite end to end; (wall s, its phases from the results file)."""
    with tempfile.TemporaryDirectory() as d:
        results = Path(d) / "results.json"
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-m", "pytest", "--rocm-target", "cpu",
                        str(ROOT / "suites/smoke"), "-q", "-p", "no:cacheprovider",
                        "--llm-results", str(results)], cwd=ROOT, check=False,
                       env={**os.environ, "PYTEST_ROCM_LLM_CACHE": str(cache)})
        wall = time.monotonic() - t0
        return wall, json.loads(results.read_text())["phases"]


def quick(cache: Path) -> None:
    """Resolve everything a full run uses and exercise the measuring code; no engine."""
    suite = load_suite(SUITE)
    for variant, make in VARIANTS.items():
        target = make(TARGETS["cpu"])
        pool = ServerPool(settings_for(target, cache), Path("."), lambda m: None)
        for engine, profile in PROFILES.items():
            assert suite.engine_of(profile) == engine, (profile, suite.engine_of(profile))
            argv = pool.launch_argv(suite, profile, ("python",), "/model", 30000)
            env = pool.server_env(suite, profile)
            print(f"{variant:6} {engine:6} {profile}: {' '.join(argv[3:])}")
            print(f"{'':14}env {json.dumps(env, sort_keys=True)}")
    suite.workload_for(WORKLOAD, TARGETS["cpu"])  # the workload the full run measures
    after, before = TARGETS["cpu"], before_target(TARGETS["cpu"])
    assert after != before, "the shipped recipe has no idle or thread settings to compare"
    with busy_core() as proc:
        cores = idle_cores(proc.pid, 1.0)
    with busy_core("import time; time.sleep(5)") as sleeper:
        idle = idle_cores(sleeper.pid, 1.0)
    print(f"measuring code: a busy loop keeps {cores:.2f} cores busy, a sleeper {idle:.3f}")
    # Not "> 0.3 cores": CI runs this beside provisioning, whose bytecode step keeps both cores
    # busy (a busy loop read 0.26 there). Broken code reads a busy loop as idle or a sleeper
    # as busy; a share of a contended core is neither.
    assert cores > 0.05 > idle and cores > 10 * idle, "process-tree CPU measurement is broken"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="resolve and self-check only (CI)")
    p.add_argument("--idle-s", type=float, default=20.0)
    p.add_argument("--variants", default="before,after")
    p.add_argument("--engines", default="sglang,vllm")
    p.add_argument("--no-decode", action="store_true", help="skip the decode measurements")
    p.add_argument("--requests", type=int, default=8, help="decode requests per measurement")
    p.add_argument("--suite", action="store_true",
                   help="also run the smoke suite and print its wall time by phase")
    a = p.parse_args()
    cache = Path(os.environ.get("PYTEST_ROCM_LLM_CACHE", "~/.cache/pytest-rocm-llm")).expanduser()
    if a.quick:
        quick(cache)
        return
    suite = load_suite(SUITE)
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for engine in a.engines.split(","):
        for variant in a.variants.split(","):
            rows[(engine, variant)] = measure(variant, engine, suite, cache, a.idle_s,
                                              not a.no_decode, a.requests)
            print(f"{engine} {variant}: {rows[(engine, variant)]}", flush=True)
    keys = ("start_s", "idle_cores", "ttft_after_pause_s", "ttft_warm_s", "decode_quiet",
            "decode_busy", "busy_over_quiet")
    print(f"\n{'engine':7} {'variant':7} " + " ".join(f"{k:>18}" for k in keys))
    for (engine, variant), r in rows.items():
        print(f"{engine:7} {variant:7} " + " ".join(
            f"{r[k]:18.3f}" if k in r else f"{'-':>18}" for k in keys))
    for engine in a.engines.split(","):
        b, f = rows.get((engine, "before")), rows.get((engine, "after"))
        if b and f and f["idle_cores"] > 0:
            print(f"{engine}: idle cores before/after {b['idle_cores']:.3f} / "
                  f"{f['idle_cores']:.3f} (x{b['idle_cores'] / f['idle_cores']:.0f})")
    if a.suite:
        wall, phases = smoke_phases(cache)
        print(f"\nsmoke suite: {wall:.0f} s wall")
        for ph in phases:
            print(f"  {ph['kind']:12} {ph['name']:32} {ph['seconds']:7.1f} s"
                  + ("" if ph["ok"] else " (failed)"))


if __name__ == "__main__":
    main()
