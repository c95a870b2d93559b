"""Correctness evaluations in suite.toml (``[evals.<name>]``): which kinds exist, which
profiles each needs, and which metrics it produces (so a check naming a metric the eval
cannot produce is a UsageError before anything runs).

Parsing dispatches on ``kind`` to the evaluation's own config parser; none of them imports
an HTTP stack, numpy or scipy, so parsing a suite stays light.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_rocm_llm.config.toml import REQUIRED, Table

ACCURACY_KINDS = ("gsm8k", "arithmetic", "gpqa", "tau2")
KINDS = (*ACCURACY_KINDS, "parity", "long_context")

_METRICS: dict[str, tuple[str, ...]] = {
    "accuracy": ("accuracy", "accuracy_strict", "accuracy_flexible", "invalid_rate",
                 "failed_requests", "n", "correct", "stderr"),
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


def parse_eval(name: str, t: Table, base: Any = None) -> Any:
    """The eval's frozen config (with ``base``: a per-target override of some fields)."""
    kind = t.data.get("kind", getattr(base, "kind", None))
    if kind is None:
        t.string("kind", REQUIRED)  # fails naming the key
    if kind not in KINDS:
        t.fail("kind", f"{kind!r} is not an evaluation kind ({', '.join(KINDS)})")
    if kind in ACCURACY_KINDS:
        from pytest_rocm_llm.correctness.accuracy.config import parse_accuracy

        return parse_accuracy(name, t, base)
    if kind == "parity":
        from pytest_rocm_llm.correctness.parity import parse_parity

        return parse_parity(name, t, base)
    from pytest_rocm_llm.correctness.long_context import parse_long_context

    return parse_long_context(name, t, base)


def profiles_of(config: Any) -> tuple[str | None, ...]:
    """The server profiles an eval talks to (parity: the speculative one, then its reference)."""
    if config.kind == "parity":
        return (config.profile, config.reference_profile)
    return (config.profile,)
