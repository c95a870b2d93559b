"""Correctness evaluations in suite.toml (``[evals.<name>]``): which kinds exist, which
profiles each needs, and which metrics it produces (so a check naming a metric the eval
cannot produce is a UsageError before anything runs).

Parsing looks ``kind`` up in a registry of the evaluations' own table parsers; none of them imports
an HTTP stack, numpy or scipy, so parsing a suite stays light.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from pytest_rocm_llm.config.toml import Table

ACCURACY_KINDS = ("gsm8k", "arithmetic", "gpqa", "tau2")
KINDS = (*ACCURACY_KINDS, "parity", "long_context")

_METRICS: dict[str, tuple[str, ...]] = {
    "accuracy": ("accuracy", "accuracy_strict", "accuracy_flexible", "invalid_rate",
                 "cut_in_reasoning_rate", "failed_requests", "n", "correct", "stderr"),
    "parity": ("agree_ratio", "match_ratio", "near_tie_ratio", "real_divergences",
               "real_divergences_first_k", "accept_length", "prompts", "near_ties",
               "failed_requests"),
    "long_context": ("accuracy_min", "degenerate_outputs"),
}
_LONG_CONTEXT_PER_LENGTH = re.compile(r"(accuracy|degenerate)@\d+")
# Metrics that are a share of n scored items: their noise is binomial.
RATIO_METRICS = {"accuracy", "accuracy_strict", "accuracy_flexible", "agree_ratio",
                 "match_ratio", "accuracy_min"}
UNITS = {"accept_length": "tok/step"}


def family(kind: str) -> str:
    return "accuracy" if kind in ACCURACY_KINDS else kind


def metric_known(kind: str, metric: str) -> bool:
    if metric in _METRICS[family(kind)]:
        return True
    return kind == "long_context" and bool(_LONG_CONTEXT_PER_LENGTH.fullmatch(metric))


def metrics_of(kind: str) -> str:
    extra = ", accuracy@<length>, degenerate@<length>" if kind == "long_context" else ""
    return ", ".join(_METRICS[family(kind)]) + extra


# kind -> "module:function" parsing its table into the kind's frozen config. Imported on
# use, so a suite without parity never imports the parity runner; a new kind is one line here
# (and its metrics above), never a branch in the parsers.
PARSERS: dict[str, str] = {
    **{k: "pytest_rocm_llm.correctness.accuracy.config:parse_accuracy" for k in ACCURACY_KINDS},
    "parity": "pytest_rocm_llm.correctness.parity:parse_parity",
    "long_context": "pytest_rocm_llm.correctness.long_context:parse_long_context",
}


def parse_eval(name: str, t: Table, base: Any = None) -> Any:
    """The eval's frozen config (with ``base``: a per-target override of some fields)."""
    kind = t.kind(KINDS, "an evaluation", base)
    module, function = PARSERS[kind].split(":")
    return getattr(importlib.import_module(module), function)(name, t, base)


def profiles_of(config: Any) -> tuple[str | None, ...]:
    """The server profiles an eval talks to (parity: the speculative one, then its reference)."""
    if config.kind == "parity":
        return (config.profile, config.reference_profile)
    return (config.profile,)
