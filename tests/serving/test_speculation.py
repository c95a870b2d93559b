"""A run's speculative accept length from its own requests (sglang's per-request figures)."""

from __future__ import annotations

from pytest_rocm_llm.client.completions import Generation, failed
from pytest_rocm_llm.serving.speculation import SpecCounters, between, from_generations


def gen(tokens: int, verify: int | None) -> Generation:
    return Generation(tuple(range(tokens)), (None,) * tokens, ({},) * tokens, "length", tokens,
                      verify)


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
