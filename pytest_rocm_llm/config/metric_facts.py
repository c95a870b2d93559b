"""A metric's facts in one record: its unit, where its noise comes from, whether a relative
check may compare it. Workload and evaluation kinds name the metrics they produce
(config/workload.py, config/evals.py); every reader (check validation, the unit in a row, the
measurement's noise, a stored baseline's spread) asks this record, not a table of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Where a metric's spread comes from when a workload ran one trial:
#   runs         only from repeated runs (maxima, percentiles, rates over a window)
#   binomial     a share of n items (its n gives its noise)
#   per_request  a median or mean of one value per request (that value's standard error)
Noise = Literal["runs", "binomial", "per_request"]


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str = ""
    noise: Noise = "runs"
    # per_request: the request record's attribute it summarizes, and the factor from the
    # standard error of that attribute's mean to the metric's (a median's is ~1.25x)
    per_request: tuple[str, float] | None = None
    # a speed, higher better on both sides: what a relative check (relative_to) may compare
    speed: bool = False


_MEDIAN = 1.2533  # stderr of a median of normal values over the stderr of their mean

_ALL = (
    # workloads
    Metric("output_speed_tok_s", "tok/s", "per_request", ("output_speed_tok_s", _MEDIAN),
           speed=True),
    Metric("output_tok_s", "tok/s", speed=True),
    Metric("total_tok_s", "tok/s", speed=True),
    Metric("request_throughput", "req/s", speed=True),
    Metric("saturation_rate", "req/s"),
    Metric("ttft_p50_s", "s"), Metric("ttft_p99_s", "s"), Metric("ttft_max_s", "s"),
    Metric("tpot_p50_s", "s", "per_request", ("tpot_s", _MEDIAN)),
    Metric("tpot_p99_s", "s"), Metric("itl_p99_s", "s"), Metric("e2e_p50_s", "s"),
    Metric("success_ratio", noise="binomial"),
    Metric("cache_hit_ratio"),
    Metric("accept_length", "tok/step"),
    Metric("usd_per_mtok", "$/Mtok"),
    Metric("steady_output_tok_s", "tok/s"),
    Metric("capacity_output_tok_s", "tok/s"),
    Metric("mean_output_tokens", "tok"),
    # evaluations
    Metric("accuracy", noise="binomial"),
    Metric("accuracy_strict", noise="binomial"),
    Metric("accuracy_flexible", noise="binomial"),
    Metric("invalid_rate", noise="binomial"),
    Metric("cut_in_reasoning_rate"), Metric("failed_requests"), Metric("n"),
    Metric("correct"), Metric("stderr"),
    Metric("agree_ratio", noise="binomial"),
    Metric("match_ratio", noise="binomial"),
    Metric("near_tie_ratio"), Metric("real_divergences"), Metric("real_divergences_first_k"),
    Metric("prompts"), Metric("near_ties"),
    Metric("accuracy_min", noise="binomial"),  # the worst length's share
    Metric("degenerate_outputs"),
)
METRICS: dict[str, Metric] = {m.name: m for m in _ALL}


def facts(name: str) -> Metric:
    """The record of ``name``; one it does not know (a per-length ``accuracy@4096``) has a
    unit of none and no noise but its runs'."""
    return METRICS.get(name) or Metric(name)


def unit(name: str) -> str:
    return facts(name).unit


def is_proportion(name: str) -> bool:
    """A share of n items: its noise is binomial."""
    return facts(name).noise == "binomial"


def speeds() -> tuple[str, ...]:
    return tuple(m.name for m in _ALL if m.speed)
