"""Correctness evaluations in suite.toml (``[evals.<name>]``): which kinds exist, which
profiles each needs, and which metrics it produces (so a check naming a metric the eval
cannot produce is a UsageError before anything runs).

Each kind is one record (``EvalKind``: its parser, its runner, its metrics) in one registry
(``EVALS``, open to other packages through the ``pytest_rocm_llm.evals`` entry point group); no
parser imports an HTTP stack, numpy or scipy, so parsing a suite stays light.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pytest_rocm_llm.config.toml import Table
from pytest_rocm_llm.kinds import Registry, load


@dataclass(frozen=True)
class EvalKind:
    """One kind of evaluation, as every stage needs to know it. What its parser returns is the
    kind's frozen config: ``name``, ``kind``, ``profile`` (and ``reference_profile`` for a
    second server), and optionally ``estimated_s(decode, prefill, batch)``, one build's run
    time at those speeds (tok/s), which the plan's time estimate reads."""

    name: str
    # "module:function" parsing its table into the kind's frozen config, and the one running
    # it ((EvalRuns, config, servers) -> EvalResult): loaded on use, so parsing a suite never
    # imports a runner and a suite without parity never imports the parity runner
    parser: str
    runner: str
    metrics: tuple[str, ...]  # their facts: config/metric_facts.py
    # metric families measured per prompt length: ``accuracy`` -> ``accuracy@<length>``
    per_length: tuple[str, ...] = ()
    # what a failed check of it means, in the report's categories (verdicts/status.py):
    # "accuracy" (answers got worse) or "parity" (outputs diverge from the reference's)
    failure: str = "accuracy"
    # "module:function" (config, data_dir, gpqa_csv, gpqa_sha256) raising Unavailable when
    # the eval's local data or tool is missing or altered, checked before any server starts
    inputs: str | None = None

    def produces(self, metric: str) -> bool:
        if metric in self.metrics:
            return True
        family, _, length = metric.partition("@")
        return family in self.per_length and bool(re.fullmatch(r"\d+", length))

    def metrics_text(self) -> str:
        return ", ".join([*self.metrics, *(f"{f}@<length>" for f in self.per_length)])


_ACCURACY_METRICS = ("accuracy", "accuracy_strict", "accuracy_flexible", "invalid_rate",
                     "cut_in_reasoning_rate", "failed_requests", "n", "correct", "stderr")
_ACCURACY = "pytest_rocm_llm.correctness.accuracy.config:parse_accuracy"
_RUNS = "pytest_rocm_llm.correctness.runs"
# GSM8K without a data directory is located too: in the Hugging Face cache (a pinned commit's
# cached file is used with no network), else fetched; an air-gapped node without it learns
# so before its servers start, not hours later when the eval's turn comes.
_ITEMS = "pytest_rocm_llm.correctness.accuracy.config:build_items"


def _accuracy_kind(name: str, runner: str = f"{_RUNS}:run_accuracy",
                   inputs: str | None = None) -> EvalKind:
    """One of the accuracy kinds: one parser, their shared metrics."""
    return EvalKind(name, _ACCURACY, runner, _ACCURACY_METRICS, inputs=inputs)


GSM8K = _accuracy_kind("gsm8k", inputs=_ITEMS)
ARITHMETIC = _accuracy_kind("arithmetic")
GPQA = _accuracy_kind("gpqa", inputs=_ITEMS)
TAU2 = _accuracy_kind("tau2", f"{_RUNS}:run_tau2",
                      "pytest_rocm_llm.correctness.accuracy.tau2:check_inputs")
PARITY = EvalKind(
    "parity", "pytest_rocm_llm.correctness.parity:parse_parity", f"{_RUNS}:run_parity",
    ("agree_ratio", "match_ratio", "near_tie_ratio", "real_divergences",
     "real_divergences_first_k", "accept_length", "prompts", "near_ties", "failed_requests"),
    failure="parity")
LONG_CONTEXT = EvalKind(
    "long_context", "pytest_rocm_llm.correctness.long_context:parse_long_context",
    f"{_RUNS}:run_long_context", ("accuracy_min", "degenerate_outputs"),
    per_length=("accuracy", "degenerate"))

EVALS: Registry[EvalKind] = Registry("an evaluation", "pytest_rocm_llm.evals", {
    k: f"pytest_rocm_llm.config.evals:{k.upper()}"
    for k in ("gsm8k", "arithmetic", "gpqa", "tau2", "parity", "long_context")})


def parse_eval(name: str, t: Table, base: Any = None) -> Any:
    """The eval's frozen config (with ``base``: a per-target override of some fields)."""
    kind = EVALS.get(t.kind(EVALS.names(), "an evaluation", base))
    return load(kind.parser)(name, t, base)  # type: ignore[operator]


def profiles_of(config: Any) -> tuple[str | None, ...]:
    """The server profiles an eval talks to (parity: the speculative one, then its reference)."""
    reference = getattr(config, "reference_profile", None)
    return (config.profile,) if reference is None else (config.profile, reference)
