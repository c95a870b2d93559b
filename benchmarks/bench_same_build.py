"""How far apart two servers of the same build land on the CPU reference: real paired runs of
a build against itself, each through the production plugin (two real sglang servers, A-B-B-A
trials, the sequential gate), repeated with fresh servers.

Two servers of one build can sit at different levels for their whole life (memory
placement, thread placement, the process environment's size). Every pair of trials on the
same two servers shares that offset, so the CPU reference gives both builds fresh servers for
every A-B-B-A block and judges the blocks (verdicts/paired.py). This measures both spreads
from those blocks: the trial CV (the two pairs of a block differ by trial noise only) and the
servers' own CV (the block means spread by both), the figures config/targets.py states.

    python benchmarks/bench_same_build.py --runs 4 [--trials 6] [--output-tokens 128]
    python benchmarks/bench_same_build.py --runs 1 --defaults [--slow-forward 0.15]
    python benchmarks/bench_same_build.py --quick   # seconds: the analysis on fixed numbers

The trial is 2 requests of 64 tokens in, 128 out (the shape config/targets.py's CPU figures
are stated for; a 16-token trial spreads 14%, a 128-token one 3-5.5%, 4.7% pooled).
``--defaults`` runs the gate as a user gets it (default trials and budget, an undecided
check failing the run): the same build must pass; ``--slow-forward F`` makes the
candidate's every forward pass (1 + F) times as long, which it must call regressed.

Prints, per run, the delta, its interval and verdict; then the trial CV, the SD of the block
means, the server-instance CV they imply and the between-run SD of the runs' means. Needs a
quiet machine: a neighbour's load moves one server's trials and not the other's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
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
flags = {{ "context-length" = 2048, "random-seed" = 1234 }}

[workloads.decode]
kind = "single_stream"
input_tokens = {input_tokens}
output_tokens = {output_tokens}
requests = {requests}
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


def candidate_args(slow_forward: float) -> list[str]:
    """The candidate: the same install (a marker in its environment only), or with every
    forward pass slowed by ``slow_forward`` times its own duration (tests/stand_ins/
    slow_forward: a slowdown inside the model, start-up untouched)."""
    if not slow_forward:
        return ["--llm-candidate-env", "PYTEST_ROCM_LLM_SAME_BUILD=1"]
    from pytest_rocm_llm.serving.reference.provision import STUBS

    path = os.pathsep.join((str(ROOT / "tests" / "stand_ins" / "slow_forward"), str(STUBS)))
    return ["--llm-candidate-env", f"PYTHONPATH={path}",
            "--llm-candidate-env", f"ROCM_LLM_SLOW_FORWARD={slow_forward:g}"]


def one_run(work: Path, i: int, trials: int | None, slow_forward: float = 0.0) -> dict:
    """One real paired run of the candidate against the build; its decode_speed row, with
    the run's exit status. ``trials`` None: the production defaults (trials, budget, and an
    undecided check failing the run)."""
    results = work / f"results-{i}.json"
    design = (["--llm-inconclusive", "pass", "--llm-pair-trials", str(trials),
               "--llm-pair-budget", str(trials)] if trials is not None else [])
    cmd = [sys.executable, "-m", "pytest", "--rocm-target", "cpu", "-p", "no:cacheprovider",
           "-q", "-o", "addopts=", "--llm-results", str(results),
           "--llm-baselines", str(work / "baselines"), *candidate_args(slow_forward),
           *design, "suites"]
    code = run_child(cmd, work)
    if not results.exists():
        raise SystemExit(f"run {i}: no results file (pytest exit {code}; its output is above)")
    doc = json.loads(results.read_text())
    (row,) = doc["paired"]
    return {**row, "exit": code, "trials": doc["builds"]["same/decode"]}


def run_child(cmd: list[str], cwd: Path) -> int:
    """Run the inner pytest with its output shown as it goes (a run takes up to an hour),
    and stop it when this benchmark is stopped. It runs in its own session so that a
    terminal's Ctrl-C or a SIGTERM reaches it once, through here, as a SIGINT: pytest's
    own interrupt, whose teardown stops every server it started (its guardian reaps them
    if even that is cut short)."""
    # A shell's background job starts with SIGINT ignored, and Python keeps an ignored
    # SIGINT ignored: the child gets the default back, so pytest's own handler is installed.
    proc = subprocess.Popen(cmd, cwd=cwd, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        return proc.wait()
    except BaseException:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:  # a stuck stop: its guardian reaps the servers
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


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
              f"{r['status']} over {r['n']} pairs: {r['incumbent']:.2f} -> "
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
    # The trial's shape: a longer trial averages more tokens, so it spreads less
    ap.add_argument("--input-tokens", type=int, default=64)
    ap.add_argument("--output-tokens", type=int, default=128)
    ap.add_argument("--requests", type=int, default=2)
    ap.add_argument("--defaults", action="store_true",
                    help="the production defaults: --llm-pair-trials/--llm-pair-budget not "
                         "given, and an undecided check fails the run")
    ap.add_argument("--slow-forward", type=float, default=0.0,
                    help="a slower candidate: each forward pass this many times longer again")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, help="write the runs' rows here (JSON), to pool later")
    args = ap.parse_args()
    if args.quick:  # the analysis on fixed rows: blocks apart by more than their trials
        rows = [{"delta": 0.0, "ci_low": -0.1, "ci_high": 0.1, "status": "x", "n": 4,
                 "incumbent": 1.0, "candidate": 1.0,
                 "pairs": [m - 0.01, m + 0.01, -m - 0.005, -m + 0.005]}
                for m in (0.05, -0.03)]
        a = show(rows)
        # blocks at +-5% and +-3%: instance CV sqrt((0.0017 - 0.0000375) / 2) = 2.9%
        return 0 if 0.028 < a["instance_cv"] < 0.030 and a["trial_cv"] < 0.01 else 1
    with tempfile.TemporaryDirectory(prefix="bench-same-build-") as tmp:
        work = Path(tmp)
        (work / "suites" / "same").mkdir(parents=True)
        (work / "suites" / "same" / "suite.toml").write_text(SUITE.format(
            input_tokens=args.input_tokens, output_tokens=args.output_tokens,
            requests=args.requests))
        (work / "suites" / "same" / "test_same.py").write_text(TEST)
        rows = []
        for i in range(1, args.runs + 1):
            rows.append(one_run(work, i, None if args.defaults else args.trials,
                                args.slow_forward))
            r = rows[-1]
            print(f"run {i}/{args.runs}: {r['delta']:+.1%} {r['status']} at {r['n']} trials "
                  f"per build, pytest exit {r['exit']}: {r['detail']}", flush=True)
            if args.out:
                args.out.write_text(json.dumps(rows, indent=1))
        show(rows)
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        raise SystemExit("stopped: the inner pytest stopped its servers") from None
