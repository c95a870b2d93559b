"""How the steady-state output tok/s behind glm52's capacity gate (2626 tok/s/node) reads on
servers that keep up with a sweep step exactly, side by side with sglang's own
steady-state window, at glm52's configured step size.

Records are built on the production Poisson schedule (performance.prompts.poisson_schedule)
for each seed: every request gets its first token after a fixed TTFT and its forced output
length at a fixed per-request decode speed (no queueing: the server keeps up). The figure is
the production one (performance.metrics.serving_metrics). For each offered rate it prints the
mean and spread over seeds, the 1st/99th percentiles and the share of runs reading >= the
floor: at 2.4 req/s x 1000 tokens (a node that only keeps up with the published rate) that
share is the gate's false-pass rate; at 2.8 req/s (a node that holds the first step past 2.63
req/s) one minus it is the false-fail rate. sglang's window (sglang/benchmark/steady_state.py:
the longest span with in-flight >= 0.8 x its peak) is read from the CPU reference
environment's sglang when one is installed.

    python benchmarks/bench_steady_window.py [--seeds 200] [--requests N] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_rocm_llm.client.records import RequestRecord  # noqa: E402
from pytest_rocm_llm.config.suite import load_suite  # noqa: E402
from pytest_rocm_llm.config.targets import TARGETS  # noqa: E402
from pytest_rocm_llm.performance.metrics import serving_metrics  # noqa: E402
from pytest_rocm_llm.performance.prompts import poisson_schedule  # noqa: E402

TTFT_S = 0.6  # published p50 0.62 s
SPEED = 40.0  # tok/s per request under load: the suite's own estimate (workloads.aggregate)


def sglang_steady_state() -> ModuleType | None:
    engines = Path.home() / ".cache" / "pytest-rocm-llm" / "engines"
    for path in sorted(engines.glob("sglang-*/lib/python*/site-packages/sglang/benchmark/"
                                    "steady_state.py")):
        spec = importlib.util.spec_from_file_location("sglang_steady_state", path)
        if spec is None or spec.loader is None:
            continue
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # its dataclasses look their module up
        spec.loader.exec_module(mod)
        return mod
    return None


def kept_up(rate: float, n: int, tokens: int, seed: int) -> list[RequestRecord]:
    decode = (tokens - 1) / SPEED
    return [RequestRecord(index=i, send_s=at, expected_output_tokens=tokens,
                          expected_prompt_tokens=1, ok=True, ttft_s=TTFT_S,
                          e2e_s=TTFT_S + decode, prompt_tokens=1, completion_tokens=tokens)
            for i, at in enumerate(poisson_schedule(n, rate, seed))]


def sglang_reading(mod: ModuleType, recs: list[RequestRecord]) -> float:
    outs = [SimpleNamespace(success=True, start_time=r.send_s, latency=r.e2e_s, ttft=r.ttft_s,
                            itl=[1.0 / SPEED] * (r.completion_tokens - 1),
                            output_len=r.completion_tokens, generated_text="") for r in recs]
    lens = [r.completion_tokens for r in recs]
    return float(mod.steady_state_output_throughput(outs, lens, lens, 0.8)[0])


def row(name: str, values: list[float], floor: float) -> str:
    v = np.asarray(values)
    return (f"{name:<34} {v.mean():8.1f} {v.std(ddof=1):7.1f} {np.percentile(v, 1):8.1f} "
            f"{np.percentile(v, 99):8.1f} {(v >= floor).mean():8.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="5 seeds: checks the code path runs")
    ap.add_argument("--requests", type=int, default=None,
                    help="requests per step instead of the suite's (what size meets a target)")
    args = ap.parse_args()
    seeds = 5 if args.quick else args.seeds
    suite = load_suite(ROOT / "suites" / "glm52" / "suite.toml")
    check = suite.checks["aggregate_capacity"]
    w = suite.workload_for(check.workload or "", TARGETS["mi355x"])
    if args.requests:
        w = dataclasses.replace(w, requests=args.requests)
    floor = check.min or 0.0
    mod = sglang_steady_state()
    print(f"glm52 {w.name}: {w.requests} requests per step, {w.output_tokens} output tokens, "
          f"floor {floor:g} tok/s; {seeds} seeds; TTFT {TTFT_S} s, {SPEED:g} tok/s/request")
    print(f"{'window, offered rate':<34} {'mean':>8} {'sd':>7} {'p1':>8} {'p99':>8} "
          f"{'>= floor':>8}")
    for rate in (2.4, 2.8):
        ours, theirs = [], []
        for seed in range(seeds):
            recs = kept_up(rate, w.requests, w.output_tokens, seed)
            value = serving_metrics(recs, 1.0)["steady_output_tok_s"]
            assert value is not None
            ours.append(value)
            if mod is not None:
                theirs.append(sglang_reading(mod, recs))
        offered = rate * w.output_tokens
        print(row(f"this harness, {rate:g} req/s ({offered:g})", ours, floor))
        if theirs:
            print(row(f"sglang ratio 0.8, {rate:g} req/s", theirs, floor))
    if mod is None:
        print("(sglang's steady_state.py not found: no CPU reference environment installed)")


if __name__ == "__main__":
    main()
