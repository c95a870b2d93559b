"""Run each declared workload once per session and share the result among its checks.

No pytest in here. A run against a server that died mid-way raises ``ServerDied`` (an
infrastructure failure with the log tail) instead of returning numbers from a dead server.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_rocm_llm.client.records import records_to_csv
from pytest_rocm_llm.config.targets import Target
from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.once import RunOnce
from pytest_rocm_llm.performance.metrics import STEADY_WINDOW, usd_per_million_output_tokens
from pytest_rocm_llm.performance.prompts import load_vocabulary
from pytest_rocm_llm.performance.workloads import (
    WorkloadResult,
    WorkloadStalled,
    WorkloadTimeout,
    run_workload,
)
from pytest_rocm_llm.phases import PhaseLog
from pytest_rocm_llm.progress_log import progress_to
from pytest_rocm_llm.serving.process import ServerError, log_tail
from pytest_rocm_llm.serving.server import LLMServer
from pytest_rocm_llm.standard_error import sample_sd

log = logging.getLogger(__name__)


class WorkloadTimedOut(ServerError):
    """A workload exceeded its ``timeout_s``: an infrastructure failure with the log tail."""


class ServerHung(ServerError):
    """Requests in flight received no token for the workload's ``stall_timeout_s``: an
    infrastructure failure with the log tail (a hang may leave no traceback: sglang#33978)."""


@dataclass
class WorkloadRuns:
    target: Target
    out_dir: Path
    progress: Callable[[str], None] | None = None
    phases: PhaseLog = field(default_factory=PhaseLog)
    # A text prompt source's passages (the plugin reads the dataset: performance does not
    # import the evaluations); None: only random-id workloads can run.
    corpus: Callable[[str], Sequence[str]] | None = None
    _once: RunOnce[tuple[str, str], WorkloadResult] = field(default_factory=RunOnce)

    def __post_init__(self) -> None:
        # None: progress lines are log records of this module (shown live by the plugin)
        self.progress = progress_to(log, self.progress)

    @property
    def results(self) -> dict[tuple[str, str], WorkloadResult]:
        return self._once.results

    def artifacts(self, suite: str, workload: str) -> dict[str, str]:
        """Where the run's per-request records and metrics were written."""
        stem = self.out_dir / f"{suite}-{workload}"
        return {"records_csv": str(stem.with_suffix(".csv")),
                "metrics_json": str(stem.with_suffix(".json"))}

    def get(self, suite: str, workload: Workload, server: LLMServer) -> WorkloadResult:
        """The workload's result, run on the first call; a failed run's error again."""
        def run() -> WorkloadResult:
            with self.phases.measure("workload", f"{suite}/{workload.name}"):
                return self.run_trial(suite, workload, server)

        return self._once.get((suite, workload.name), run)

    def run_trial(self, label: str, w: Workload, server: LLMServer) -> WorkloadResult:
        """Run ``w`` on ``server`` now (no memo), writing its records under ``label``: the
        shared run of ``get``, and each side of a paired trial."""
        suite = label
        vocab = load_vocabulary(server.model_path)
        if w.prompts != "random":
            if self.corpus is None:
                raise ValueError(f"workload {w.name}: no corpus for prompts = {w.prompts!r}")
            vocab = dataclasses.replace(vocab, passages=tuple(self.corpus(w.prompts)))
        n, tokens = w.expected_tokens
        self.progress(f"[rocm-llm] {suite}/{w.name}: {w.kind} on {server.profile}, "
                      f"{w.input_tokens} in / {w.output_tokens} out, ~{n} requests "
                      f"({tokens} tokens)")
        try:
            # A server that dies mid-run ends the run at once (ServerDied with its log tail).
            result = run_workload(server.base_url, server.served_model_name, vocab, w,
                                  self.progress, watch=server.check_alive,
                                  first_token_stall_s=self.target.first_token_stall_s)
        except WorkloadStalled as exc:
            log = server.log_path
            raise ServerHung(f"{suite}/{w.name} on {server.profile}: server hung: {exc}", log,
                             log_tail(log) if log else "") from None
        except WorkloadTimeout as exc:
            log = server.log_path
            raise WorkloadTimedOut(f"{suite}/{w.name} on {server.profile}: {exc} (the server "
                                   "hangs, or is too slow for this bound)", log,
                                   log_tail(log) if log else "") from None
        server.check_alive()  # numbers from a server that died mid-run are not a verdict
        m = result.metrics
        m["usd_per_mtok"] = usd_per_million_output_tokens(
            self.target.usd_per_gpu_hour, self.target.gpus_per_node, m.get("output_tok_s"))
        self.out_dir.mkdir(parents=True, exist_ok=True)
        stem = self.out_dir / f"{suite}-{w.name}"
        stem.with_suffix(".csv").write_text(records_to_csv(result.records))
        stem.with_suffix(".json").write_text(json.dumps(
            {"workload": w.name, "kind": w.kind, "profile": server.profile,
             "metrics": m, "steps": result.steps, "trials": result.trials,
             "output_speed_definition": "(completion_tokens - 1) / (e2e - TTFT)",
             "output_tok_s_definition": "output tokens / wall time of the whole run (ramp-up "
                                        "and drain included)",
             "steady_state_definition": STEADY_WINDOW},
            indent=2))
        self.progress(f"[rocm-llm] {suite}/{w.name}: " + summarize(result)
                      + f" (per-request records: {stem.with_suffix('.csv')})")
        return result


def summarize(result: WorkloadResult) -> str:
    m = result.metrics

    def f(key: str, fmt: str) -> str:
        v = m.get(key)
        return "-" if v is None else format(v, fmt)

    parts = [f"{f('succeeded', '.0f')}/{f('requests', '.0f')} ok"]
    arrivals = result.workload.arrivals
    if arrivals == "one_at_a_time":
        parts.append(f"output speed {f('output_speed_tok_s', '.1f')} tok/s")
        parts.append(f"TTFT p50 {f('ttft_p50_s', '.2f')} s")
    else:
        parts += [f"{f('output_tok_s', '.1f')} out tok/s", f"TTFT max {f('ttft_max_s', '.2f')} s",
                  f"rate {f('achieved_request_rate', '.3f')} req/s",
                  f"cache hit {f('cache_hit_ratio', '.1%')}"]
        if m.get("steady_output_tok_s") is not None:
            parts.append(f"steady state {f('steady_output_tok_s', '.1f')} out tok/s over "
                         f"{f('steady_window_s', '.0f')} s")
        parts.append(f"{f('mean_output_tokens', '.0f')} mean output tokens")
    if arrivals == "at_each_rate":
        parts.append(f"saturation {f('saturation_rate', 'g')} req/s")
        if m.get("capacity_output_tok_s") is not None:
            parts.append(f"capacity {f('capacity_output_tok_s', '.1f')} out tok/s at "
                         f"{f('capacity_rate', 'g')} req/s")
    key = "output_speed_tok_s" if arrivals == "one_at_a_time" else "output_tok_s"
    values = [v for t in result.trials if (v := t.get(key)) is not None]
    if len(values) >= 2:
        # The spread the baseline gate uses: between trials, not between requests.
        sd = sample_sd(values) or 0.0
        parts.append(f"{len(values)} trials: {key} " + " ".join(f"{v:.1f}" for v in values)
                     + f" (SD {sd:.2f}, CV {sd / (sum(values) / len(values)):.1%})")
    return ", ".join(parts)
