"""Run one workload against a running server, without pytest.

    python -m pytest_rocm_llm.performance --base-url http://127.0.0.1:30000 \\
        --model-dir /models/x --kind fixed_rate --input-tokens 20000 --output-tokens 1000 \\
        --request-rate 2.4 --requests 200 --cache-hit 0.6 --out result.json

Prints the workload's metrics as JSON (and writes them to --out); the same code path the
plugin's checks use, so a number seen here is the number a check would judge.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys

from pytest_rocm_llm.config.workload import APIS, WORKLOADS, Workload
from pytest_rocm_llm.performance.prompts import load_vocabulary
from pytest_rocm_llm.performance.workloads import run_workload


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pytest_rocm_llm.performance")
    p.add_argument("--base-url", required=True)
    p.add_argument("--model-dir", required=True, help="served model directory (tokenizer.json)")
    p.add_argument("--served-model-name", default="default")
    p.add_argument("--kind", choices=WORKLOADS.names(), default="fixed_rate")
    p.add_argument("--api", choices=APIS[:2], default="generate")
    p.add_argument("--input-tokens", type=int, required=True)
    p.add_argument("--output-tokens", type=int, required=True)
    p.add_argument("--requests", type=int, required=True)
    p.add_argument("--request-rate", type=float)
    p.add_argument("--rates", type=float, nargs="*", default=())
    p.add_argument("--ttft-slo-s", type=float)
    p.add_argument("--cache-hit", type=float, default=0.0)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--out")
    a = p.parse_args(argv)
    w = Workload(name="loadgen", kind=a.kind, profile=None, api=a.api,
                 input_tokens=a.input_tokens, output_tokens=a.output_tokens,
                 requests=a.requests, warmup=a.warmup, seed=a.seed, cache_hit=a.cache_hit,
                 request_rate=a.request_rate, rates=tuple(a.rates), ttft_slo_s=a.ttft_slo_s)
    if w.arrivals == "at_a_rate" and w.request_rate is None:
        p.error("--kind fixed_rate needs --request-rate")
    progress = (lambda _m: None) if a.quiet else (lambda m: print(m, file=sys.stderr))
    vocabulary = load_vocabulary(a.model_dir)
    # What start-up allocated (modules, the typed config's validators, the vocabulary) lives
    # until exit: frozen, the collector's full passes during the run no longer walk it, so
    # per-token CPU does not grow with what was imported.
    gc.freeze()
    result = run_workload(a.base_url.rstrip("/"), a.served_model_name, vocabulary, w, progress)
    text = json.dumps({"metrics": result.metrics, "steps": result.steps}, indent=2)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
