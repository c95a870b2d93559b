"""The one contract every correctness evaluation returns (accuracy, parity, long context).

Evaluations differ in what they run; the plugin only needs their metrics (for checks,
baselines and the report), their per-item records (attachments), what broke their
preconditions (never judged as a score) and their findings in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EvalResult:
    name: str  # the evaluation's name in suite.toml ([evals.<name>])
    kind: str  # gsm8k | arithmetic | gpqa | tau2 | parity | long_context
    metrics: Mapping[str, float]  # flat: metric name -> value (e.g. accuracy, stderr, n)
    # One JSON-able dict per item (prompt/item id, outcome); never GPQA question text.
    records: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    # Why the metrics cannot be judged (failed requests, no speculation happened, ...).
    problems: Sequence[str] = field(default_factory=tuple)
    # Findings in words, e.g. each real divergence or degenerate output.
    details: Sequence[str] = field(default_factory=tuple)
