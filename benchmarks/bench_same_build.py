"""How far apart two servers of the same build land on the CPU reference: real paired runs of
a build against itself, each through the production plugin (two real sglang servers, A-B-B-A
trials, the sequential gate), repeated with fresh servers.

Two servers of one build can sit at different levels for their whole life (memory
placement, thread placement, the process environment's size). Every pair of trials on the
same two servers shares that offset, so the CPU reference gives both builds fresh servers for
every A-B-B-A block and judges the blocks (verdicts/paired.py). This measures both spreads
from those blocks: the trial CV (the two pairs of a block differ by trial noise only) and the
servers' own CV (the block means spread by both), the figures config/targets.py states.

    python benchmarks/bench_same_build.py --runs 4 [--trials 6]
    python benchmarks/bench_same_build.py --quick   # seconds: the analysis on fixed numbers

Prints, per run, the delta, its interval and verdict; then the trial CV, the SD of the block
means, the server-instance CV they imply and the between-run SD of the runs' means. Needs a
quiet machine: a neighbour's load moves one server's trials and not the other's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import fmean, stdev

ROOT = Path(__file__).resolve().parent.parent

SUITE = """
[suite]
name = "same"
engine = "sglang"
targets = ["cpu"]
default_profile = "reference"

[model]
id = "HuggingFaceTB/SmolLM2-135M-Instruct"
served_name = "smollm2-135m-instruct"
reference = "smollm2-135m-instruct"

[profiles.reference]
flags = { "context-length" = 2048, "random-seed" = 1234 }

[workloads.decode]
kind = "single_stream"
input_tokens = 64
output_tokens = 16
requests = 2
warmup = 1
seed = 11

[checks.decode_speed]
workload = "decode"
metric = "output_speed_tok_s"
min = 0.1
source = "benchmark floor"
baseline = "none"
"""
TEST = "def test_check(llm_check, llm_judge):\n    llm_judge(llm_check)\n"


def one_run(work: Path, i: int, trials: int) -> dict:
    """One real paired run of the same build against itself; its decode_speed row."""
    results = work / f"results-{i}.json"
    cmd = [sys.executable, "-m", "pytest", "--rocm-target", "cpu", "-p", "no:cacheprovider",
           "-q", "-o", "addopts=", "--llm-results", str(results),
           "--llm-baselines", str(work / "baselines"),
           "--llm-candidate-env", "PYTEST_ROCM_LLM_SAME_BUILD=1", "--llm-inconclusive", "pass",
           "--llm-pair-trials", str(trials), "--llm-pair-budget", str(trials), "suites"]
    done = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=False)
    if not results.exists():
        raise SystemExit(f"run {i}: no results file (exit {done.returncode}):\n"
                         f"{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    doc = json.loads(results.read_text())
    (row,) = doc["paired"]
    trials = doc["builds"]["same/decode"]
    return row


def analyse(rows: list[dict]) -> dict[str, float]:
    """The trial CV and the servers' own spread from the runs' blocks of fresh servers.

    In block k the two pairs' log ratios r1, r2 share the block's two servers, whose levels
    differ by an offset with variance 2 * instance_cv^2; each trial adds its own noise, CV
    sigma. So var(r1 - r2) = 4 sigma^2 (the offset cancels) and the block mean m = (r1 + r2)
    / 2 has var(m) = sigma^2 + 2 instance_cv^2, about 0 for the same build: pooled over
    every block of every run, sigma^2 = mean((r1 - r2)^2) / 4 and instance_cv^2 = (mean(m^2)
    - sigma^2) / 2. Between-run SD of the runs' mean log ratios is printed beside it."""
    blocks = [(r["pairs"][i], r["pairs"][i + 1]) for r in rows
              for i in range(0, len(r["pairs"]) - 1, 2)]
    sigma2 = fmean((x - y) ** 2 for x, y in blocks) / 4
    var_m = fmean(((x + y) / 2) ** 2 for x, y in blocks)
    means = [fmean(r["pairs"]) for r in rows]
    excess = var_m - sigma2
    return {"blocks": float(len(blocks)), "trial_cv": math.sqrt(sigma2),
            "block_sd": math.sqrt(var_m),
            "instance_cv": math.sqrt(excess / 2) if excess > 0 else 0.0,
            "between_sd": stdev(means) if len(means) > 1 else math.nan,
            "mean_delta": math.exp(fmean(means)) - 1}


def show(rows: list[dict]) -> dict[str, float]:
    for i, r in enumerate(rows, 1):
        print(f"run {i}: {r['delta']:+.1%} [{r['ci_low']:+.1%}, {r['ci_high']:+.1%}] "
              f"{r['status']} over {r['n']} pairs: {r['baseline']:.2f} -> "
              f"{r['candidate']:.2f} tok/s")
    a = analyse(rows)
    print(f"{a['blocks']:.0f} blocks of fresh servers: trial CV {a['trial_cv']:.2%} (within a "
          f"block), SD of the block means {a['block_sd']:.2%}, implied server-instance CV "
          f"{a['instance_cv']:.2%}; between-run SD of the runs' means {a['between_sd']:.2%} "
          f"(mean delta {a['mean_delta']:+.1%})")
    return a


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, help="write the runs' rows here (JSON), to pool later")
    args = ap.parse_args()
    if args.quick:  # the analysis on fixed rows: blocks apart by more than their trials
        rows = [{"delta": 0.0, "ci_low": -0.1, "ci_high": 0.1, "status": "x", "n": 4,
                 "baseline": 1.0, "candidate": 1.0,
                 "pairs": [m - 0.01, m + 0.01, -m - 0.005, -m + 0.005]}
                for m in (0.05, -0.03)]
        a = show(rows)
        # blocks at +-5% and +-3%: instance CV sqrt((0.0017 - 0.0000375) / 2) = 2.9%
        return 0 if 0.028 < a["instance_cv"] < 0.030 and a["trial_cv"] < 0.01 else 1
    with tempfile.TemporaryDirectory(prefix="bench-same-build-") as tmp:
        work = Path(tmp)
        (work / "suites" / "same").mkdir(parents=True)
        (work / "suites" / "same" / "suite.toml").write_text(SUITE)
        (work / "suites" / "same" / "test_same.py").write_text(TEST)
        rows = []
        for i in range(1, args.runs + 1):
            rows.append(one_run(work, i, args.trials))
            r = rows[-1]
            print(f"run {i}/{args.runs}: {r['delta']:+.1%} {r['status']}", flush=True)
            if args.out:
                args.out.write_text(json.dumps(rows, indent=1))
        show(rows)
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    raise SystemExit(main())
