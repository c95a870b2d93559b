"""Metric maths on recorded request data, with Hypothesis properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rocm_llm.client.records import RequestRecord, records_to_csv
from pytest_rocm_llm.performance.metrics import (
    achieved_request_rate,
    cache_hit_ratio,
    percentile,
    serving_metrics,
    success_ratio,
    usd_per_million_output_tokens,
)


def rec(i: int, ttft: float, e2e: float, out: int, *, ok: bool = True, prompt: int = 100,
        cached: int | None = 60, send: float = 0.0, gaps=None, verify: int | None = None
        ) -> RequestRecord:
    return RequestRecord(index=i, send_s=send, expected_output_tokens=out,
                         expected_prompt_tokens=prompt, ok=ok, ttft_s=ttft if ok else None,
                         e2e_s=e2e if ok else None, chunk_gaps=gaps or [],
                         prompt_tokens=prompt, cached_tokens=cached,
                         completion_tokens=out if ok else 0, spec_verify_ct=verify,
                         error=None if ok else "HTTP 500")


def test_output_speed_excludes_time_to_first_token() -> None:
    r = rec(0, ttft=2.0, e2e=12.0, out=101)
    assert r.tpot_s == pytest.approx(0.1)
    assert r.output_speed_tok_s == pytest.approx(10.0)  # 100 tokens after the first in 10 s


def test_itl_spreads_a_multi_token_chunk() -> None:
    r = rec(0, 0.5, 1.0, 5, gaps=[(0.2, 1), (0.3, 3)])
    assert r.itl_s == pytest.approx([0.2, 0.1, 0.1, 0.1])


def test_accept_length_is_tokens_per_verify_step() -> None:
    assert rec(0, 0.1, 1.0, 120, verify=40).accept_length == 3.0
    assert rec(0, 0.1, 1.0, 120).accept_length is None


def test_failed_requests_count_only_against_success() -> None:
    recs = [rec(0, 1.0, 3.0, 21), rec(1, 1.0, 3.0, 21, ok=False)]
    m = serving_metrics(recs, duration_s=10.0)
    assert m["success_ratio"] == 0.5
    assert m["output_tok_s"] == pytest.approx(2.1)  # only the successful request's tokens
    assert m["ttft_max_s"] == 1.0


def test_known_values() -> None:
    recs = [rec(i, ttft=0.1 * (i + 1), e2e=1.0 + 0.1 * (i + 1), out=11, send=i * 0.5,
                prompt=200, cached=120) for i in range(10)]
    m = serving_metrics(recs, duration_s=6.0)
    assert m["ttft_p50_s"] == pytest.approx(0.55)
    assert m["ttft_p99_s"] == pytest.approx(0.991)
    assert m["ttft_max_s"] == pytest.approx(1.0)
    assert m["cache_hit_ratio"] == pytest.approx(0.6)
    assert m["achieved_request_rate"] == pytest.approx(10 / 4.5)
    assert m["total_tok_s"] == pytest.approx((10 * 11 + 10 * 200) / 6.0)
    assert m["tpot_p50_s"] == pytest.approx(0.1)


def test_cache_ratio_needs_reported_cached_tokens() -> None:
    assert cache_hit_ratio([rec(0, 1, 2, 3, cached=None)]) is None


def test_cost_per_million_tokens() -> None:
    # MI355X node: 8 GPUs at $1.48/GPU-hr serving 2626 output tok/s
    assert usd_per_million_output_tokens(1.48, 8, 2626.0) == pytest.approx(1.2524, abs=1e-4)
    assert usd_per_million_output_tokens(None, 8, 2626.0) is None
    assert usd_per_million_output_tokens(1.48, 8, 0.0) is None


finite = st.floats(min_value=0.001, max_value=1000, allow_nan=False)


@given(ttft=finite, decode=finite, shift=finite, tokens=st.integers(2, 5000))
def test_speed_is_invariant_to_ttft(ttft: float, decode: float, shift: float,
                                    tokens: int) -> None:
    a = rec(0, ttft, ttft + decode, tokens)
    b = rec(0, ttft + shift, ttft + shift + decode, tokens)
    assert a.output_speed_tok_s == pytest.approx(b.output_speed_tok_s, rel=1e-9)
    assert a.output_speed_tok_s == pytest.approx((tokens - 1) / decode, rel=1e-9)


@given(st.lists(finite, min_size=1, max_size=200))
def test_percentiles_are_ordered_and_bounded(values: list[float]) -> None:
    p50, p99 = percentile(values, 50), percentile(values, 99)
    assert min(values) <= p50 <= p99 <= max(values) + 1e-9


@given(st.lists(st.booleans(), min_size=1, max_size=50))
def test_success_ratio_counts_ok_requests(oks: list[bool]) -> None:
    recs = [rec(i, 1, 2, 3, ok=ok) for i, ok in enumerate(oks)]
    assert success_ratio(recs) == sum(oks) / len(oks)


@given(n=st.integers(1, 500), rate=st.floats(0.01, 100))
def test_rate_of_an_exact_schedule_is_the_target(n: int, rate: float) -> None:
    recs = [rec(i, 1, 2, 3, send=(i + 1) / rate) for i in range(n)]
    assert achieved_request_rate(recs) == pytest.approx(rate, rel=1e-9)


def test_empty_input_gives_none_not_zero_or_infinity() -> None:
    m = serving_metrics([], duration_s=0.0)
    assert m["output_tok_s"] is None and m["ttft_p50_s"] is None
    assert m["success_ratio"] == 0.0
    assert not any(isinstance(v, float) and math.isinf(v) for v in m.values())


def test_csv_has_one_row_per_request() -> None:
    text = records_to_csv([rec(0, 1, 2, 3), rec(1, 1, 2, 3, ok=False)])
    lines = text.strip().splitlines()
    assert len(lines) == 3 and "ttft_s" in lines[0] and "HTTP 500" in lines[2]
