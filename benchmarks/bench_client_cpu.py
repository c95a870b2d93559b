"""The load generator's client CPU per streamed token: this tree against an older revision,
side by side in one run.

Both clients stream from the same local stream source (``stream_source.py``, pinned to the
second core; each client pinned to the first), in alternating order, with 20k-token prompts
and 1000-token outputs. Two figures per client and round:

- marginal CPU per 1000 tokens: (CPU at 64 streams - CPU at 16 streams) / 48; start-up
  (imports, tokenizer) cancels out, so this is what a 2626 tok/s node costs the client;
- whole-process CPU at 16 streams (start-up included), as ``bench_loadgen.py`` measures it.

    python benchmarks/bench_client_cpu.py [--against 3a95b80] [--rounds 6]

Issue 12's target: the restructured client within 5% of 3a95b80 (the tree before it).
Needs the CPU reference's tokenizer (``ensure_reference``); no engine server is started.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stream_source import started  # noqa: E402  (beside this script)

from pytest_rocm_llm.serving.reference.provision import ensure_reference  # noqa: E402

TOKENS_PER_STREAM = 1000


def client_module(tree: Path) -> str:
    """The CLI module of that tree (``loadgen`` before the restructure)."""
    new = tree / "pytest_rocm_llm/performance/__main__.py"
    return "pytest_rocm_llm.performance" if new.exists() else "pytest_rocm_llm.loadgen"


def client_cpu(tree: Path, port: int, model: str, streams: int) -> float:
    """CPU seconds of one client process streaming ``streams`` requests at once."""
    argv = [sys.executable, "-m", client_module(tree), "--base-url", f"http://127.0.0.1:{port}",
            "--model-dir", model, "--kind", "fixed_rate", "--input-tokens", "20000",
            "--output-tokens", str(TOKENS_PER_STREAM), "--requests", str(streams),
            "--request-rate", "inf", "--quiet"]
    proc = subprocess.Popen(argv, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        assert proc.stderr is not None
        raise RuntimeError(f"{tree}: client failed:\n{proc.stderr.read().decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", default="3a95b80", help="git revision to compare with")
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    if (os.cpu_count() or 1) < 2:
        sys.exit("needs two cores: one for the client, one for the stream source")
    cache = Path(os.environ.get("PYTEST_ROCM_LLM_CACHE", "~/.cache/pytest-rocm-llm")).expanduser()
    model = str(ensure_reference(cache, "smollm2-135m-instruct").model_dir)
    with tempfile.TemporaryDirectory() as d:
        old = Path(d) / "old"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old),
                        a.against], check=True, capture_output=True)
        try:
            compare({"old": old, "new": ROOT}, model, a)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           check=False, capture_output=True)


def compare(trees: dict[str, Path], model: str, a: argparse.Namespace) -> None:
    marginal: dict[str, list[float]] = {t: [] for t in trees}
    whole: dict[str, list[float]] = {t: [] for t in trees}
    with started(TOKENS_PER_STREAM) as port:
        for r in range(a.rounds):
            for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                c16 = client_cpu(trees[name], port, model, 16)
                c64 = client_cpu(trees[name], port, model, 64)
                marginal[name].append((c64 - c16) / 48)
                whole[name].append(c16 / 16)
                print(f"round {r + 1} {name}: marginal {marginal[name][-1]:.4f}, whole "
                      f"process {whole[name][-1]:.4f} CPU s per 1k tokens", flush=True)
    print(f"\nclient CPU s per 1000 streamed tokens, median of {a.rounds} alternated rounds "
          f"(old = {a.against}):")
    for label, figures in (("marginal (64 - 16 streams)", marginal),
                           ("whole process, 16 streams", whole)):
        o, n = statistics.median(figures["old"]), statistics.median(figures["new"])
        print(f"  {label:27}: old {o:.4f}  new {n:.4f}  new/old {n / o:.3f}")


if __name__ == "__main__":
    main()
