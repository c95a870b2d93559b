"""Our load generator against sglang's own bench_serving, side by side in one run.

Against one CPU-reference sglang server, alternate ``python -m pytest_rocm_llm.performance`` and
``python -m sglang.bench_serving`` (random-ids dataset, same ISL/OSL/rate/seed/count), then
print the ratios of output throughput, TTFT p50 and TPOT p50, and each client's CPU seconds
per 1000 streamed tokens (whole process, and net of its import/start-up cost measured
separately). Then measure the client's maximum stream rate on one core against a local
stream source, with 20k-token prompts.

    python benchmarks/bench_loadgen.py [--rounds 2] [--requests 8] [--rate 0.5]
    python benchmarks/bench_loadgen.py --quick   # seconds: no engine server, tiny sizes (CI)

Targets (issue 3): throughput within 2%, TTFT p50 within 5%, our client CPU per token at most
1/5 of bench_serving's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stream_source import started  # noqa: E402  (beside this script)

from pytest_rocm_llm.config.settings import Settings  # noqa: E402
from pytest_rocm_llm.config.suite import load_suite  # noqa: E402
from pytest_rocm_llm.config.targets import TARGETS  # noqa: E402
from pytest_rocm_llm.serving.pool import ServerPool  # noqa: E402
from pytest_rocm_llm.serving.reference.provision import STUBS, ensure_reference  # noqa: E402


def timed(argv: list[str], env: dict[str, str] | None = None,
          cpu: int | None = None) -> tuple[float, float, str]:
    """Run argv; (wall s, CPU s of the process and its children, stdout)."""
    def pin() -> None:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})

    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})}, preexec_fn=pin)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        text = out.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv[:4]} failed:\n{text[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, text


def ours(url: str, model: str, a: argparse.Namespace, rate: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        _, cpu, _ = timed([sys.executable, "-m", "pytest_rocm_llm.performance", "--base-url", url,
                           "--model-dir", model, "--served-model-name",
                           "smollm2-135m-instruct", "--kind", "fixed_rate",
                           "--input-tokens", str(a.isl), "--output-tokens", str(a.osl),
                           "--requests", str(a.requests), "--request-rate", rate,
                           "--seed", str(a.seed), "--quiet", "--out", f.name])
        m = json.loads(Path(f.name).read_text())["metrics"]
    return {"tput": m["output_tok_s"], "ttft": m["ttft_p50_s"], "tpot": m["tpot_p50_s"],
            "tokens": m["succeeded"] * a.osl, "cpu": cpu}


def theirs(engine_python: str, port: int, model: str, a: argparse.Namespace,
           rate: str) -> dict:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "bench.jsonl"
        _, cpu, _ = timed([engine_python, "-m", "sglang.bench_serving", "--backend", "sglang",
                           "--host", "127.0.0.1", "--port", str(port),
                           "--dataset-name", "random-ids", "--random-input-len", str(a.isl),
                           "--random-output-len", str(a.osl), "--random-range-ratio", "1",
                           "--num-prompts", str(a.requests), "--request-rate", rate,
                           "--seed", str(a.seed), "--model", model, "--tokenizer", model,
                           "--output-file", str(out), "--disable-tqdm"],
                          env={"HF_HUB_OFFLINE": "1", "SGLANG_USE_CPU_ENGINE": "1",
                               "PYTHONPATH": str(STUBS)})
        m = json.loads(out.read_text().strip().splitlines()[-1])
    return {"tput": m["output_throughput"], "ttft": m["median_ttft_ms"] / 1e3,
            "tpot": m["median_tpot_ms"] / 1e3, "tokens": m["total_output_tokens"], "cpu": cpu}


def startup_cpu(argv: list[str], env: dict[str, str] | None = None) -> float:
    return statistics.median(timed(argv, env)[1] for _ in range(3))


def stream_capacity(model: str, engine_python: str, streams: int, isl: int,
                    osl: int) -> dict[str, tuple[float, float]]:
    """Each client against the local stream source, pinned to core 0 (source on core 1):
    tool -> (tokens/s wall, client CPU s per 1000 streamed tokens)."""
    tokens = streams * osl
    out: dict[str, tuple[float, float]] = {}
    with started(osl) as port:
        wall, cpu, _ = timed([sys.executable, "-m", "pytest_rocm_llm.performance", "--base-url",
                              f"http://127.0.0.1:{port}", "--model-dir", model, "--kind",
                              "fixed_rate", "--input-tokens", str(isl), "--output-tokens",
                              str(osl), "--requests", str(streams), "--request-rate", "inf",
                              "--quiet"], cpu=0)
        out["ours"] = (tokens / wall, cpu / tokens * 1000)
        with tempfile.TemporaryDirectory() as d:
            wall, cpu, _ = timed([engine_python, "-m", "sglang.bench_serving", "--backend",
                                  "sglang", "--host", "127.0.0.1", "--port", str(port),
                                  "--dataset-name", "random-ids", "--random-input-len", str(isl),
                                  "--random-output-len", str(osl), "--random-range-ratio", "1",
                                  "--num-prompts", str(streams), "--request-rate", "inf",
                                  "--model", model, "--tokenizer", model, "--disable-tqdm",
                                  "--output-file", str(Path(d) / "b.jsonl")],
                                 env={"HF_HUB_OFFLINE": "1", "SGLANG_USE_CPU_ENGINE": "1",
                                      "PYTHONPATH": str(STUBS)},
                                 cpu=0)
        out["bench_serving"] = (tokens / wall, cpu / tokens * 1000)
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--requests", type=int, default=8)
    p.add_argument("--isl", type=int, default=128)
    p.add_argument("--osl", type=int, default=32)
    p.add_argument("--rate", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--only-capacity", action="store_true",
                   help="skip the real-server comparison; only the stream-source part")
    p.add_argument("--quick", action="store_true",
                   help="CI: resolve the suite's server profile, then the stream-source part "
                        "at tiny sizes (seconds); no engine server is started")
    a = p.parse_args()

    cache = Path(os.environ.get("PYTEST_ROCM_LLM_CACHE", "~/.cache/pytest-rocm-llm")).expanduser()
    ref = ensure_reference(cache, "smollm2-135m-instruct")
    model = str(ref.model_dir)
    suite = load_suite(ROOT / "suites/smoke/suite.toml")
    settings = Settings(TARGETS["cpu"], None, (str(ref.python),), None, 900.0, False, None,
                        "127.0.0.1", cache)
    # The server the comparison runs on: its command line is built as a run would build it.
    ServerPool(settings, Path(".")).launch_argv(suite, suite.default_profile,
                                                (str(ref.python),), model, 30000)
    if a.quick:
        capacity(model, str(ref.python), streams=2, isl=512, osl=64)
        print("quick mode: start-up dominates these figures; they check the code path only")
        return
    if not a.only_capacity:
        compare_on_server(a, ref, model, suite, settings)
    capacity(model, str(ref.python))


def compare_on_server(a: argparse.Namespace, ref, model: str, suite, settings) -> None:
    results: dict[tuple[str, str], list[dict]] = {}
    with tempfile.TemporaryDirectory() as logs:
        pool = ServerPool(settings, Path(logs))
        try:
            server = pool.get(suite, suite.default_profile)
            port = int(server.base_url.rsplit(":", 1)[1])
            for r in range(a.rounds):
                for rate in ("inf", str(a.rate)):
                    tools = ["ours", "theirs"] if r % 2 == 0 else ["theirs", "ours"]
                    for tool in tools:
                        # Same seed, same prompts: without a flush the second tool would be
                        # served from the cache the first one filled.
                        httpx.post(server.base_url + "/flush_cache", timeout=60).raise_for_status()
                        res = (ours(server.base_url, model, a, rate) if tool == "ours"
                               else theirs(str(ref.python), port, model, a, rate))
                        results.setdefault((tool, rate), []).append(res)
                        print(f"round {r + 1} {tool:6} rate={rate:>4}: {res}", flush=True)
        finally:
            pool.stop_all()

    our_start = startup_cpu([sys.executable, "-c",
                             "import pytest_rocm_llm.performance.loadgen, "
                             "pytest_rocm_llm.performance.workloads, tokenizers, numpy"])
    their_start = startup_cpu([str(ref.python), "-c", "import sglang.bench_serving"],
                              {"SGLANG_USE_CPU_ENGINE": "1",
                               "PYTHONPATH": str(STUBS)})

    def med(tool: str, rate: str, key: str) -> float:
        return statistics.median(x[key] for x in results[(tool, rate)])

    print(f"\nISL {a.isl} / OSL {a.osl}, {a.requests} requests, seed {a.seed}, "
          f"{a.rounds} alternating rounds (medians); ours / bench_serving:")
    print(f"{'rate':>6} | {'out tput':>8} | {'TTFT p50':>8} | {'TPOT p50':>8} | "
          f"{'CPU s/1k tok ours':>17} | {'theirs':>8} | {'net ours':>8} | {'net theirs':>10}")
    for rate in ("inf", str(a.rate)):
        def per_k(tool: str, start: float, rate: str = rate) -> float:
            return (med(tool, rate, "cpu") - start) / med(tool, rate, "tokens") * 1000

        print(f"{rate:>6} | {med('ours', rate, 'tput') / med('theirs', rate, 'tput'):8.3f} | "
              f"{med('ours', rate, 'ttft') / med('theirs', rate, 'ttft'):8.3f} | "
              f"{med('ours', rate, 'tpot') / med('theirs', rate, 'tpot'):8.3f} | "
              f"{per_k('ours', 0):17.3f} | {per_k('theirs', 0):8.3f} | "
              f"{per_k('ours', our_start):8.3f} | {per_k('theirs', their_start):10.3f}")
    print(f"start-up CPU s: ours {our_start:.2f}, bench_serving {their_start:.2f}")


def capacity(model: str, engine_python: str, streams: int = 16, isl: int = 20000,
             osl: int = 1000) -> None:
    cap = stream_capacity(model, engine_python, streams, isl, osl)
    print(f"\nagainst a local stream source, client pinned to one core, {streams} streams, "
          f"{isl}-token prompts, {osl}-token outputs ({streams * osl} tokens), whole process:")
    for tool, (rate, per_k) in cap.items():
        print(f"  {tool:13}: {rate:8,.0f} tok/s wall, {per_k:.3f} CPU s per 1k tokens"
              + (f" (a 2626 tok/s node needs {2626 * per_k / 1000:.0%} of a core)"
                 if tool == "ours" else ""))
    print(f"  CPU per token, ours / bench_serving: "
          f"{cap['ours'][1] / cap['bench_serving'][1]:.3f}")

if __name__ == "__main__":
    main()
