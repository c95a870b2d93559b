"""How far apart two servers of the same build land on the CPU reference: real paired runs of
a build against itself, each through the production plugin (two real sglang servers, A-B-B-A
trials, the sequential gate), repeated with fresh servers.

Within one paired run the interval is built from the trial-to-trial spread of the per-pair log
ratios. Two servers of one build can still sit at different levels for their whole life
(memory placement, thread placement, the process environment's size), and where a run keeps
one server per build (the CPU reference parks the idle one instead of restarting it) that
offset is in every pair alike: the interval cannot see it. This measures it: the spread of the
same-build delta from run to run against the spread the runs' own intervals assume.

    python benchmarks/bench_same_build.py --runs 4 [--trials 4]
    python benchmarks/bench_same_build.py --quick   # seconds: the analysis on fixed numbers

Prints, per run, the delta, its interval and verdict; then the between-run SD of the mean log
ratio, the mean within-run standard error, their ratio, and the server-instance CV it implies
(var_between = 2 * instance_cv^2 + se^2), and the trial CV within one server. Needs a quiet
machine: a neighbour's load moves one server's trials and not the other's.
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
    row["trial_values"] = [[t[row["metric"]] for t in trials[side]]
                           for side in ("baseline_trials", "candidate_trials")]
    return row


def analyse(rows: list[dict]) -> dict[str, float]:
    """Between-run SD of the mean log ratio against the runs' own standard errors."""
    means = [fmean(r["pairs"]) for r in rows]
    ses = [stdev(r["pairs"]) / math.sqrt(len(r["pairs"])) for r in rows]
    between = stdev(means) if len(means) > 1 else math.nan
    within = math.sqrt(fmean(s * s for s in ses))
    excess = between ** 2 - within ** 2
    # one build's trials on one server: the trial CV (CPU_TRIAL_CV), pooled over builds
    cvs = [stdev(v) / fmean(v) for r in rows for v in r.get("trial_values", []) if len(v) > 1]
    return {"between_sd": between, "within_se": within, "ratio": between / within,
            "trial_cv": math.sqrt(fmean(c * c for c in cvs)) if cvs else math.nan,
            "instance_cv": math.sqrt(excess / 2) if excess > 0 else 0.0,
            "mean_delta": math.exp(fmean(means)) - 1}


def show(rows: list[dict]) -> dict[str, float]:
    for i, r in enumerate(rows, 1):
        print(f"run {i}: {r['delta']:+.1%} [{r['ci_low']:+.1%}, {r['ci_high']:+.1%}] "
              f"{r['status']} over {r['n']} pairs: {r['baseline']:.2f} -> "
              f"{r['candidate']:.2f} tok/s")
    a = analyse(rows)
    print(f"between-run SD of the same-build log ratio {a['between_sd']:.2%}; mean within-run "
          f"standard error {a['within_se']:.2%}; ratio {a['ratio']:.2f}; implied server-"
          f"instance CV {a['instance_cv']:.2%} (mean delta {a['mean_delta']:+.1%}); "
          f"trial CV within one server {a['trial_cv']:.2%}")
    return a


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, help="write the runs' rows here (JSON), to pool later")
    args = ap.parse_args()
    if args.quick:  # the analysis on fixed rows: two runs apart by more than their SEs
        rows = [{"delta": math.exp(m) - 1, "ci_low": -0.1, "ci_high": 0.1, "status": "x",
                 "n": 4, "baseline": 1.0, "candidate": 1.0,
                 "pairs": [m - 0.01, m + 0.01, m - 0.005, m + 0.005],
                 "trial_values": [[10.0, 10.2, 9.9, 10.1], [10.0, 10.1, 10.2, 9.8]]}
                for m in (0.05, -0.03)]
        a = show(rows)
        return 0 if a["ratio"] > 1 and a["instance_cv"] > 0 else 1
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
