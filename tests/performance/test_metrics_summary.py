"""The serving summary to the digit on hand-built records: every key it reports and its exact
value (each percentile at its stated rank, failed requests excluded, speculative acceptance
averaged), plus the edges of its parts: a sub-second run, a run without speculative decoding,
a sending window measured from a given start, prompt-cache ratios with zero or one prompt
token, and a run whose arrivals span exactly one request lifetime."""

from __future__ import annotations

import pytest

from pytest_rocm_llm.client.records import RequestRecord
from pytest_rocm_llm.performance.metrics import (
    achieved_request_rate,
    cache_hit_ratio,
    serving_metrics,
    steady_output_tok_s,
    steady_state_window,
)


def rec(send: float, ttft: float, e2e: float, out: int, *, prompt: int = 100,
        cached: int | None = None, gaps: list[tuple[float, int]] | None = None,
        verify: int | None = None, ok: bool = True) -> RequestRecord:
    return RequestRecord(index=0, send_s=send, expected_output_tokens=out,
                         expected_prompt_tokens=prompt, ok=ok,
                         error=None if ok else "HTTP 500",
                         ttft_s=ttft if ok else None, e2e_s=e2e if ok else None,
                         chunk_gaps=gaps or [], prompt_tokens=prompt, cached_tokens=cached,
                         completion_tokens=out if ok else 0, spec_verify_ct=verify)


def run() -> list[RequestRecord]:
    """Four successes sent at 1..4 s and a failure at 5 s (its prompt counts for nothing).

    tokens (send + TTFT, then each chunk): a 1.5 2 2.5 3 3.5 / b 3 4 6 / c 3.25 4.25 (+2) /
    d 4.75. TPOT a 0.5, b 1.5, c 0.5 (d has one token); ITL a 0.5 x4, b 1 and 2, c 0.5 x2;
    e2e 2.5, 4, 1.25, 0.75; TTFT 0.5, 1, 0.25, 0.75; accept length a 5/2, b 3/1."""
    return [
        rec(1.0, 0.5, 2.5, 5, cached=40, gaps=[(0.5, 1)] * 4, verify=2),
        rec(2.0, 1.0, 4.0, 3, cached=0, gaps=[(1.0, 1), (2.0, 1)], verify=1),
        rec(3.0, 0.25, 1.25, 3, prompt=50, cached=50, gaps=[(1.0, 2)]),
        rec(4.0, 0.75, 0.75, 1, prompt=50),  # no cached count reported: out of the ratio
        rec(5.0, 0.0, 0.0, 7, cached=100, verify=1, ok=False),
    ]


def test_every_summary_key_has_its_exact_value() -> None:
    m = serving_metrics(run(), duration_s=8.0, start_s=1.0)
    # steady window: first send 1 + median lifetime (1.25 + 2.5) / 2 = 2.875, to the last
    # send 5; inside it a 3 and 3.5, b 3 and 4, c 3.25 (1 token) and 4.25 (2), d 4.75
    assert m == {
        "requests": 5.0,
        "succeeded": 4.0,
        "success_ratio": 0.8,
        "duration_s": 8.0,
        "output_tok_s": pytest.approx(12 / 8),
        "steady_output_tok_s": pytest.approx(8 / 2.125),
        "steady_window_start_s": pytest.approx(2.875),
        "steady_window_s": pytest.approx(2.125),
        "mean_output_tokens": pytest.approx(3.0),
        "total_tok_s": pytest.approx((12 + 300) / 8),
        "request_throughput": pytest.approx(4 / 8),
        "achieved_request_rate": pytest.approx(5 / (5.0 - 1.0)),  # from start_s, not 0
        "cache_hit_ratio": pytest.approx((40 + 0 + 50) / (100 + 100 + 50)),
        "ttft_p50_s": pytest.approx(0.625),
        "ttft_p99_s": pytest.approx(0.75 + 0.97 * 0.25),
        "ttft_max_s": 1.0,
        "tpot_p50_s": pytest.approx(0.5),
        "tpot_p99_s": pytest.approx(0.5 + 0.98 * 1.0),  # below the 1.5 maximum
        "itl_p99_s": pytest.approx(1.0 + 0.93 * 1.0),  # below the 2.0 maximum
        "output_speed_tok_s": pytest.approx(2.0),
        "e2e_p50_s": pytest.approx(1.875),
        "accept_length": pytest.approx(2.75),  # mean of 2.5 and 3; the failure adds nothing
    }


def test_a_sub_second_run_still_reports_its_throughputs() -> None:
    m = serving_metrics([rec(0.25, 0.1, 0.35, 3, prompt=7)], duration_s=0.5)
    assert m["output_tok_s"] == pytest.approx(6.0)
    assert m["total_tok_s"] == pytest.approx(20.0)
    assert m["request_throughput"] == pytest.approx(2.0)


def test_a_run_without_speculative_decoding_has_no_accept_length() -> None:
    m = serving_metrics([rec(0.0, 0.1, 1.0, 10), rec(1.0, 0.1, 1.0, 10)], duration_s=2.0)
    assert m["accept_length"] is None


def test_the_sending_window_is_measured_from_its_start() -> None:
    recs = [rec(float(s), 0.1, 1.0, 2) for s in (3.0, 4.0, 5.0, 6.0)]
    assert achieved_request_rate(recs, start_s=2.0) == pytest.approx(1.0)
    assert achieved_request_rate(recs) == pytest.approx(4 / 6)
    assert achieved_request_rate(recs, start_s=6.0) is None


def test_cache_ratio_counts_a_reported_zero_and_needs_prompt_tokens() -> None:
    assert cache_hit_ratio([rec(0.0, 0.1, 1.0, 2, prompt=100, cached=0)]) == 0.0
    assert cache_hit_ratio([rec(0.0, 0.1, 1.0, 2, prompt=1, cached=1)]) == 1.0
    # a success that reported a cached count but no prompt tokens: no ratio, no division
    assert cache_hit_ratio([rec(0.0, 0.1, 1.0, 2, prompt=0, cached=0)]) is None


def test_arrivals_spanning_exactly_one_lifetime_have_no_steady_state() -> None:
    # lifetimes 2 s, sends at 0 and 2: the window [0 + 2, 2] is empty
    recs = [rec(0.0, 0.5, 2.0, 4), rec(2.0, 0.5, 2.0, 4)]
    assert steady_state_window(recs) is None
    assert steady_output_tok_s(recs)["steady_output_tok_s"] is None
    assert serving_metrics(recs, duration_s=4.0)["steady_window_s"] is None
