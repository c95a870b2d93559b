"""Workload metrics from request records. Pure functions: the maths is what the tests pin.

Percentiles are numpy's linear interpolation (what sglang's bench_serving reports), so
figures compare one to one. Failed requests never contribute latencies or tokens: they
count only against the success ratio.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pytest_rocm_llm.performance.records import RequestRecord


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50)


def _ok(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    return [r for r in records if r.ok]


def success_ratio(records: Sequence[RequestRecord]) -> float:
    return len(_ok(records)) / len(records) if records else 0.0


def cache_hit_ratio(records: Sequence[RequestRecord]) -> float | None:
    """Sum of cached prompt tokens over sum of prompt tokens (successful requests)."""
    ok = [r for r in _ok(records) if r.cached_tokens is not None]
    prompt = sum(r.prompt_tokens for r in ok)
    if not ok or prompt == 0:
        return None
    return sum(r.cached_tokens or 0 for r in ok) / prompt


def achieved_request_rate(records: Sequence[RequestRecord], start_s: float = 0.0) -> float | None:
    """Requests sent per second over the sending window: N / (last send - start). The
    schedule is built so that its last send falls at N / rate; a client that fell behind its
    schedule shows a lower rate."""
    if not records:
        return None
    span = max(r.send_s for r in records) - start_s
    return len(records) / span if span > 0 else None


def serving_metrics(records: Sequence[RequestRecord], duration_s: float,
                    start_s: float = 0.0) -> dict[str, float | None]:
    """Metrics of a run whose requests all fell inside ``duration_s`` of wall time."""
    ok = _ok(records)
    out_tokens = sum(r.completion_tokens for r in ok)
    in_tokens = sum(r.prompt_tokens for r in ok)
    ttfts = [r.ttft_s for r in ok if r.ttft_s is not None]
    tpots = [t for r in ok if (t := r.tpot_s) is not None]
    itls = [x for r in ok for x in r.itl_s]
    speeds = [s for r in ok if (s := r.output_speed_tok_s) is not None]
    accept = [a for r in ok if (a := r.accept_length) is not None]
    positive = duration_s > 0
    return {
        "requests": float(len(records)),
        "succeeded": float(len(ok)),
        "success_ratio": success_ratio(records),
        "duration_s": duration_s,
        "output_tok_s": out_tokens / duration_s if positive else None,
        "total_tok_s": (out_tokens + in_tokens) / duration_s if positive else None,
        "request_throughput": len(ok) / duration_s if positive else None,
        "achieved_request_rate": achieved_request_rate(records, start_s),
        "cache_hit_ratio": cache_hit_ratio(records),
        "ttft_p50_s": percentile(ttfts, 50),
        "ttft_p99_s": percentile(ttfts, 99),
        "ttft_max_s": max(ttfts) if ttfts else None,
        "tpot_p50_s": percentile(tpots, 50),
        "tpot_p99_s": percentile(tpots, 99),
        "itl_p99_s": percentile(itls, 99),
        "output_speed_tok_s": median(speeds),
        "e2e_p50_s": percentile([r.e2e_s for r in ok if r.e2e_s is not None], 50),
        "accept_length": float(np.mean(accept)) if accept else None,
    }


def usd_per_million_output_tokens(usd_per_gpu_hour: float | None, gpus: int,
                                  output_tok_s: float | None) -> float | None:
    """Cost of output at the measured rate: (GPU-hours per second of serving) / tokens."""
    if usd_per_gpu_hour is None or not output_tok_s or output_tok_s <= 0:
        return None
    return usd_per_gpu_hour * gpus / 3600.0 / output_tok_s * 1e6
