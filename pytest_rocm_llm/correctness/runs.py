"""Run each declared evaluation once per session and share its result among its checks.

No pytest in here. Each kind runs through the runner its record names (config/evals.py,
``EvalKind.runner``, one function each below): accuracy evals through the chat
sampler, parity through greedy generations with top-k logprobs on two profiles (one server
at a time, so a GPU node that fits one TP8 server at once can run it), long context through
token-exact prompts. Per-item records go next to the workloads' (JSON); GPQA records hold
item ids and letters only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_rocm_llm.correctness.result import EvalResult
from pytest_rocm_llm.errors import Unavailable
from pytest_rocm_llm.once import RunOnce
from pytest_rocm_llm.phases import PhaseLog
from pytest_rocm_llm.progress_log import progress_to
from pytest_rocm_llm.serving.server import LLMServer
from pytest_rocm_llm.serving.speculation import SpecCounters

log = logging.getLogger(__name__)

Servers = Callable[[str | None], LLMServer]


def engine_counters(server: LLMServer) -> SpecCounters | None:
    """The server's speculative counters since start, as its engine exposes them."""
    from pytest_rocm_llm.serving.engines import get_engine

    return get_engine(server.engine).spec_counters(server.base_url)


class EvalUnavailable(Unavailable):
    """The evaluation cannot run here (dataset or tool missing): a skip, with the reason."""


@dataclass
class EvalRuns:
    out_dir: Path
    data_dir: Path | None
    gpqa_csv: Path | None
    gpqa_sha256: str | None
    progress: Callable[[str], None] | None = None
    spec_counters: Callable[[LLMServer], SpecCounters | None] = engine_counters
    phases: PhaseLog = field(default_factory=PhaseLog)
    _once: RunOnce[tuple[str, str], EvalResult] = field(default_factory=RunOnce)

    def __post_init__(self) -> None:
        # None: progress lines are log records of this module (shown live by the plugin)
        self.progress = progress_to(log, self.progress)

    @property
    def results(self) -> dict[tuple[str, str], EvalResult]:
        return self._once.results

    def artifacts(self, suite: str, name: str) -> dict[str, str]:
        return {"records_json": str(self.out_dir / f"{suite}-{name}.json")}

    def get(self, suite: str, config: Any, servers: Servers) -> EvalResult:
        """The evaluation's result, run on the first call; a failed run's error again."""
        def run() -> EvalResult:
            with self.phases.measure("evaluation", f"{suite}/{config.name}"):
                result = self._run(config, servers)
            self._write(suite, result)
            return result

        return self._once.get((suite, config.name), run)

    def _write(self, suite: str, result: EvalResult) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = Path(self.artifacts(suite, result.name)["records_json"])
        path.write_text(json.dumps({
            "evaluation": result.name, "kind": result.kind, "metrics": dict(result.metrics),
            "problems": list(result.problems), "details": list(result.details),
            "records": list(result.records)}, indent=2, default=str))
        shown = ", ".join(f"{k} {v:.4g}" for k, v in result.metrics.items())
        self.progress(f"[rocm-llm] {suite}/{result.name}: {shown} (records: {path})")

    def _run(self, config: Any, servers: Servers) -> EvalResult:
        from pytest_rocm_llm.config.evals import EVALS
        from pytest_rocm_llm.kinds import load

        run = load(EVALS.get(config.kind).runner)
        result: EvalResult = run(self, config, servers)  # type: ignore[operator]
        return result


# Each evaluation kind's runner (config/evals.py names it): the kind's config on the servers
# of its profiles, with the session's data and progress from ``runs``.


def run_accuracy(runs: EvalRuns, config: Any, servers: Servers) -> EvalResult:
    from pytest_rocm_llm.client.chat import ChatSampler
    from pytest_rocm_llm.correctness.accuracy.config import build_items
    from pytest_rocm_llm.correctness.accuracy.runner import run_accuracy_sync
    from pytest_rocm_llm.errors import DatasetUnavailable

    try:
        items = build_items(config, runs.data_dir, runs.gpqa_csv, runs.gpqa_sha256)
    except DatasetUnavailable as exc:
        raise EvalUnavailable(str(exc)) from None
    server = servers(config.profile)
    runs.progress(f"[rocm-llm] {config.name}: {len(items)} {config.kind} items on "
                  f"{server.profile}, concurrency {config.concurrency}")
    sampler = ChatSampler(server.base_url, server.served_model_name, config.max_tokens,
                          config.temperature, config.seed, config.request_timeout_s,
                          chat_template_kwargs=dict(config.chat_template_kwargs))
    result = run_accuracy_sync(items, sampler, config.concurrency, runs.progress,
                               config.name, config.kind, config.scoring)
    server.check_alive()  # a score from a server that died is not a verdict
    return result


def run_tau2(runs: EvalRuns, config: Any, servers: Servers) -> EvalResult:
    from pytest_rocm_llm.correctness.accuracy import tau2

    try:
        tau2.find_command(config)
    except tau2.Tau2Unavailable as exc:
        raise EvalUnavailable(str(exc)) from None
    server = servers(config.profile)
    user = (tau2.Endpoint(config.user_base_url, config.user_model or "")
            if config.user_base_url else None)
    result = tau2.run_tau2(config, tau2.Endpoint(server.base_url,
                                                 server.served_model_name),
                           user, runs.out_dir, runs.progress)
    server.check_alive()
    return result


def run_parity(runs: EvalRuns, config: Any, servers: Servers) -> EvalResult:
    from pytest_rocm_llm.client.completions import Endpoint, generate_sync
    from pytest_rocm_llm.correctness.parity import continuation, judge_parity, parity_prompt_set
    from pytest_rocm_llm.serving.speculation import between

    # Reference first, then the speculative server: one server at a time suffices.
    ref = servers(config.reference_profile)
    prompts = parity_prompt_set(config, ref.model_path)
    ids = [p for _, p in prompts]
    k = config.top_logprobs
    runs.progress(f"[rocm-llm] {config.name}: {len(ids)} prompts on {ref.profile}")
    refs = generate_sync(Endpoint(ref.base_url, config.api, ref.served_model_name), ids,
                         config.max_tokens, k, progress=runs.progress,
                         label=f"{config.name} reference")
    ref.check_alive()
    spec = servers(config.profile)
    end = Endpoint(spec.base_url, config.api, spec.served_model_name)
    runs.progress(f"[rocm-llm] {config.name}: {len(ids)} prompts on {spec.profile}")
    # The counters bracket the parity requests alone: since start, they also hold
    # whatever ran on this server before (glm52's decode workload does).
    before = runs.spec_counters(spec)
    specs = generate_sync(end, ids, config.max_tokens, k, progress=runs.progress,
                          label=f"{config.name} speculative")
    counted = between(before, runs.spec_counters(spec))
    result = judge_parity(config, prompts, refs, specs, counted,
                          continuation(end, config), _decoder(spec.model_path))
    spec.check_alive()
    return result


def run_long_context(runs: EvalRuns, config: Any, servers: Servers) -> EvalResult:
    from pytest_rocm_llm.client.completions import Endpoint
    from pytest_rocm_llm.client.tokenizer import tokenizer_file
    from pytest_rocm_llm.correctness import long_context

    server = servers(config.profile)
    result = long_context.run_long_context(
        config, Endpoint(server.base_url, config.api, server.served_model_name),
        str(tokenizer_file(server.model_path)), runs.progress)
    server.check_alive()
    return result


def _decoder(model_path: str) -> Callable[[list[int]], str] | None:
    from pytest_rocm_llm.client.tokenizer import TokenizerUnavailable, load_tokenizer

    try:
        t = load_tokenizer(model_path)
    except TokenizerUnavailable:
        return None  # divergences are then shown as ids
    return lambda ids: t.decode(ids, skip_special_tokens=False)
