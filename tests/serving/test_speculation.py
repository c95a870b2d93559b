"""A run's speculative accept length from its own requests (sglang's per-request figures)."""

from __future__ import annotations

from pytest_rocm_llm.client.completions import GreedyGeneration, failed
from pytest_rocm_llm.serving.speculation import SpecCounters, between, from_generations


def gen(tokens: int, verify: int | None) -> GreedyGeneration:
    return GreedyGeneration(tuple(range(tokens)), (None,) * tokens, ({},) * tokens, "length",
                            tokens, verify)


def test_per_request_figures_are_summed_not_averaged() -> None:
    # 30 tokens in 10 steps and 2 tokens in 2 steps: 32 / 12 tokens per step (a mean of the
    # two ratios, 2.0, would weigh the short request like the long one)
    c = from_generations([gen(30, 10), gen(2, 2), failed("boom"), gen(5, None)])
    assert c == SpecCounters(32.0, 12.0) and c.accept_length == 32 / 12


def test_no_figure_is_none_not_one() -> None:
    assert from_generations([gen(8, None)]) is None
    assert SpecCounters(0.0, 0.0).accept_length is None
    assert between(None, SpecCounters(5.0, 2.0)) is None
    assert between(SpecCounters(50.0, 10.0), SpecCounters(62.0, 16.0)) == SpecCounters(12.0, 6.0)


def test_serving_modules_load_without_the_client_layer() -> None:
    """serving sits below client: counting speculation names a request's fields, not the
    client's class (an import upward would close a circle as the layers grow)."""
    import json
    import subprocess
    import sys

    code = ("import json, sys\n"
            "import pytest_rocm_llm.serving.speculation, pytest_rocm_llm.serving.context_limits\n"
            "print(json.dumps(sorted(m for m in sys.modules "
            "if m.startswith(('pytest_rocm_llm.client', 'pytest_rocm_llm.correctness', "
            "'pytest_rocm_llm.performance')))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert json.loads(out.stdout.splitlines()[-1]) == []
