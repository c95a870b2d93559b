"""Metric maths at its edges: which tokens fall inside the steady-state window (both ends
counted), when a request's token times exist at all, medians that are medians, and the
cost figure's guard and scale."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_rocm_llm.client.records import RequestRecord
from pytest_rocm_llm.performance.metrics import (
    median,
    serving_metrics,
    steady_output_tok_s,
    token_times,
    usd_per_million_output_tokens,
)


def rec(send: float, ttft: float | None, e2e: float | None, out: int, *, ok: bool = True,
        gaps: list[tuple[float, int]] | None = None) -> RequestRecord:
    return RequestRecord(index=0, send_s=send, expected_output_tokens=out,
                         expected_prompt_tokens=10, ok=ok, ttft_s=ttft, e2e_s=e2e,
                         chunk_gaps=gaps or [], prompt_tokens=10, completion_tokens=out)


def test_no_token_times_without_a_first_token_or_without_success() -> None:
    for r in (rec(0, None, 2.0, 5), rec(0, 1.0, 2.0, 5, ok=False), rec(0, 1.0, 2.0, 0)):
        times, counts = token_times(r)
        assert (len(times), len(counts)) == (0, 0)
        assert counts.dtype.kind == "i"


@pytest.mark.parametrize("n", [1, 2, 3])
def test_without_chunk_timing_tokens_spread_from_ttft_to_the_end(n: int) -> None:
    times, counts = token_times(rec(10.0, 1.0, 3.0, n))
    assert times.tolist() == pytest.approx(np.linspace(11.0, 13.0, n).tolist())
    assert counts.tolist() == [1] * n and counts.dtype.kind == "i"


def test_without_an_end_time_every_token_lands_at_the_first() -> None:
    times, counts = token_times(rec(10.0, 1.0, None, 3))
    assert times.tolist() == [11.0, 11.0, 11.0] and counts.tolist() == [1, 1, 1]


def test_chunks_that_carry_every_token_leave_none_for_the_first_chunk() -> None:
    times, counts = token_times(rec(0.0, 1.0, 2.0, 5, gaps=[(0.5, 2), (0.5, 3)]))
    assert times.tolist() == pytest.approx([1.0, 1.5, 2.0])
    assert counts.tolist() == [0, 2, 3] and counts.dtype.kind == "i"


def test_a_token_stamped_on_either_edge_of_the_window_counts() -> None:
    # lifetimes 2 s: the window is [first send + 2, last send] = [2, 4]; tokens at 2, 4, 6
    recs = [rec(0.0, 2.0, 2.0, 1), rec(2.0, 2.0, 2.0, 1), rec(4.0, 2.0, 2.0, 1)]
    assert steady_output_tok_s(recs) == {"steady_output_tok_s": 1.0,
                                         "steady_window_start_s": 2.0, "steady_window_s": 2.0}


def test_no_window_reports_every_field_as_none() -> None:
    assert steady_output_tok_s([rec(0.0, 2.0, 5.0, 1)]) == {
        "steady_output_tok_s": None, "steady_window_start_s": None, "steady_window_s": None}


def test_median_is_the_middle_not_the_mean_nor_a_nearby_percentile() -> None:
    assert median([1.0, 2.0, 3.0, 4.0]) == 2.5
    assert median([]) is None
    # decode speeds 10, 10, 10 and 100 tok/s: the median speed is 10, the mean 32.5
    recs = [rec(0.0, 1.0, 1.0 + 9 / s, 10) for s in (10.0, 10.0, 10.0, 100.0)]
    assert serving_metrics(recs, 10.0)["output_speed_tok_s"] == pytest.approx(10.0)


def test_cost_scale_and_guard() -> None:
    # $3.60 per GPU-hour is $0.001 per second; at 1 tok/s a million tokens cost $1000
    assert usd_per_million_output_tokens(3.6, 1, 1.0) == pytest.approx(1000.0, rel=1e-12)
    assert usd_per_million_output_tokens(3.6, 2, 0.5) == pytest.approx(4000.0, rel=1e-12)
    assert usd_per_million_output_tokens(3.6, 1, -5.0) is None
    assert usd_per_million_output_tokens(3.6, 1, None) is None
