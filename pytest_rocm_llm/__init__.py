"""pytest-rocm-llm: a conformance gate for LLM serving on AMD GPUs.

The names below are the public API for suite authors (``from pytest_rocm_llm import
LLMServer``); everything else may move between releases. They load on first use, so importing
this package (and loading the plugin) imports no engine, torch, HTTP stack or allure: engines
run in their own environments and are driven over HTTP.

Layers, lower first (a lower one never imports a higher one's pytest glue):
config -> serving -> client -> performance, correctness -> verdicts -> report -> plugin.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    # serving
    "LLMServer": "pytest_rocm_llm.serving.server",
    "ServerPool": "pytest_rocm_llm.serving.pool",
    # clients
    "LLMClient": "pytest_rocm_llm.client.generate",
    "Endpoint": "pytest_rocm_llm.client.completions",
    # configuration
    "Suite": "pytest_rocm_llm.config.suite",
    "load_suite": "pytest_rocm_llm.config.suite",
    "Target": "pytest_rocm_llm.config.targets",
    "TARGETS": "pytest_rocm_llm.config.targets",
    # prompts and correctness helpers suites call directly
    "load_vocabulary": "pytest_rocm_llm.performance.prompts",
    "check_prompt": "pytest_rocm_llm.correctness.parity",
    "describe": "pytest_rocm_llm.correctness.parity",
    "natural_prompts": "pytest_rocm_llm.correctness.parity",
    "parity_prompts": "pytest_rocm_llm.correctness.parity",
    "check_streams_sync": "pytest_rocm_llm.correctness.stream_consistency",
    "eos_ids": "pytest_rocm_llm.correctness.stream_consistency",
    # errors
    "RocmLlmError": "pytest_rocm_llm.errors",
    "ConfigError": "pytest_rocm_llm.errors",
    "Unavailable": "pytest_rocm_llm.errors",
    "InfrastructureError": "pytest_rocm_llm.errors",
    "VerdictFailure": "pytest_rocm_llm.errors",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_rocm_llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
