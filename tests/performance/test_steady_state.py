"""Steady-state output throughput: tokens stamped inside the window between ramp-up and drain,
over its length, with the realized mean output tokens per request beside it. Records are
built from the production Poisson schedule, so the window sees the arrivals a run sends."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_rocm_llm.client.records import RequestRecord
from pytest_rocm_llm.performance.metrics import (
    mean_output_tokens,
    serving_metrics,
    steady_state_window,
    token_times,
)
from pytest_rocm_llm.performance.prompts import poisson_schedule


def served(rate: float, n: int, tokens: int, *, speed: float = 4.0, ttft: float = 0.5,
           seed: int = 0, chunked: bool = True, ok: bool = True) -> list[RequestRecord]:
    """A server that keeps up: each request of a seeded Poisson schedule at ``rate`` gets its
    first token after ``ttft`` and the rest at ``speed`` tok/s per request, one per chunk
    (``chunked``) or with no chunk timing recorded (as in a records CSV)."""
    out = []
    for i, at in enumerate(poisson_schedule(n, rate, seed)):
        decode = (tokens - 1) / speed
        out.append(RequestRecord(
            index=i, send_s=at, expected_output_tokens=tokens, expected_prompt_tokens=100,
            ok=ok, ttft_s=ttft, e2e_s=ttft + decode, prompt_tokens=100, cached_tokens=60,
            completion_tokens=tokens,
            chunk_gaps=[(1.0 / speed, 1)] * (tokens - 1) if chunked else []))
    return out


def test_token_times_follow_the_chunks() -> None:
    r = served(1.0, 1, 5, speed=2.0, ttft=1.0)[0]
    r.send_s = 3.0
    r.chunk_gaps = [(0.5, 2), (1.5, 2)]  # a first chunk of one token, then two bursts
    times, counts = token_times(r)
    assert times.tolist() == pytest.approx([4.0, 4.5, 6.0])
    assert counts.tolist() == [1, 2, 2]


def test_token_times_without_chunk_timing_spread_over_the_decode() -> None:
    r = served(1.0, 1, 5, speed=2.0, ttft=1.0, chunked=False)[0]
    r.send_s = 3.0
    times, counts = token_times(r)
    assert times.tolist() == pytest.approx([4.0, 4.5, 5.0, 5.5, 6.0])
    assert counts.tolist() == [1] * 5


def test_the_window_runs_from_one_request_lifetime_after_the_first_send_to_the_last() -> None:
    recs = served(2.4, 300, 100)
    first, last = min(r.send_s for r in recs), max(r.send_s for r in recs)
    lifetime = 0.5 + 99 / 4.0
    assert steady_state_window(recs) == pytest.approx((first + lifetime, last))


def test_a_run_shorter_than_one_request_lifetime_has_no_steady_state() -> None:
    recs = served(2.4, 20, 100)  # 8 s of arrivals, requests live 25 s
    assert steady_state_window(recs) is None
    m = serving_metrics(recs, 40.0)
    assert m["steady_output_tok_s"] is None and m["steady_window_s"] is None
    assert m["mean_output_tokens"] == 100.0


@pytest.mark.parametrize("chunked", [True, False])
def test_a_server_that_keeps_up_shows_the_offered_load_in_steady_state(chunked: bool) -> None:
    # 2.4 req/s x 100 tokens offers 240 tok/s. The whole-run figure (tokens / wall time)
    # carries ramp-up and drain; the steady-state one does not.
    recs = served(2.4, 300, 100, chunked=chunked)
    duration = max(r.send_s + (r.e2e_s or 0) for r in recs)
    m = serving_metrics(recs, duration)
    assert m["steady_output_tok_s"] == pytest.approx(240, rel=0.05)
    assert m["output_tok_s"] is not None and m["output_tok_s"] < 0.85 * 240
    assert m["mean_output_tokens"] == 100.0
    window = steady_state_window(recs)
    assert window is not None
    assert m["steady_window_start_s"] == pytest.approx(window[0])
    assert m["steady_window_s"] == pytest.approx(window[1] - window[0])


def test_the_window_is_fixed_by_the_schedule_not_chosen_by_load() -> None:
    # A window chosen where the in-flight count is high (sglang's steady_state.py: the
    # longest span with concurrency >= 0.8 x its peak) picks Poisson upswings and reads
    # high under open-loop arrivals; this one is unbiased: over 40 seeds of a server that
    # only keeps up with 2.4 req/s x 100 tokens, the mean is within 2% of 240 tok/s and no
    # run reads 262.6 (the 2626 floor at this scale).
    values = [serving_metrics(recs, 200.0)["steady_output_tok_s"]
              for recs in (served(2.4, 300, 100, seed=s, chunked=False) for s in range(40))]
    assert all(v is not None for v in values)
    assert float(np.mean(values)) == pytest.approx(240, rel=0.02)
    assert max(values) < 262.6


def test_failed_requests_add_no_tokens_and_no_lifetime() -> None:
    recs = served(2.4, 300, 100, chunked=False)
    for r in recs[::10]:
        r.ok, r.completion_tokens, r.ttft_s, r.e2e_s = False, 0, None, None
    m = serving_metrics(recs, 200.0)
    assert m["steady_output_tok_s"] == pytest.approx(0.9 * 240, rel=0.05)
    assert m["mean_output_tokens"] == 100.0


def test_mean_output_tokens_is_over_completed_requests() -> None:
    recs = served(1.0, 4, 10)
    recs[0].completion_tokens = 14
    recs[1].ok = False
    assert mean_output_tokens(recs) == pytest.approx((14 + 10 + 10) / 3)
    assert mean_output_tokens([]) is None
