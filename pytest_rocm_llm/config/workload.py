"""Workload definitions in suite.toml: what to send, how fast, and how big.

Kept apart from the runners so that parsing a suite imports neither numpy nor an HTTP stack.
Each kind is one record (``WorkloadKind``: its table model, its runner, its metrics) in one
registry (``WORKLOADS``, open to other packages through the ``pytest_rocm_llm.workloads``
entry point group); ``parse_workload`` looks the kind up there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from pytest_rocm_llm.config.fields import NumberList, check, one_of
from pytest_rocm_llm.config.toml import Table, TomlTable, override_of, problem, validate
from pytest_rocm_llm.kinds import Registry

APIS = ("generate", "completions", "chat")
# How a kind sends its requests: the next when the last one ends (a single stream: its speed
# is per request), on a Poisson schedule at request_rate (its rate and cache hit are
# preconditions), or at each of its rates in turn (each step judged as it runs).
Arrivals = Literal["one_at_a_time", "at_a_rate", "at_each_rate"]
PROMPT_SOURCES = ("random", "gsm8k")


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str
    profile: str | None
    api: str
    input_tokens: int
    output_tokens: int
    requests: int
    warmup: int = 1
    trials: int = 1  # repeated runs; the spread across them feeds the baseline gate
    seed: int = 0
    cache_hit: float = 0.0
    request_rate: float | None = None
    rates: tuple[float, ...] = ()
    ttft_slo_s: float | None = None
    request_timeout_s: float = 600.0
    # Bound on the whole run (warm-up included); None: unbounded. A run that exceeds it is
    # an infrastructure failure (a hung server), not a slow verdict.
    timeout_s: float | None = None
    # No token from any in-flight request for this long: the server hangs (a named
    # infrastructure failure with the log tail), however long timeout_s still runs.
    stall_timeout_s: float | None = 120.0
    description: str = ""
    # What the prompt ids are: "random" (ids drawn from the vocabulary: kernel speed, no
    # meaning) or "gsm8k" (natural text, GSM8K train problems and solutions, MIT, cut to the
    # exact length): speculative acceptance on random context is not acceptance on text.
    prompts: str = "random"

    @property
    def arrivals(self) -> Arrivals:
        """How its kind sends requests (WorkloadKind.arrivals)."""
        return WORKLOADS.get(self.kind).arrivals

    @property
    def expected_tokens(self) -> tuple[int, int]:
        """(requests, prompt + output tokens) this workload sends, warm-up included."""
        per = self.input_tokens + self.output_tokens
        if self.arrivals == "at_each_rate":
            n = self.requests * len(self.rates)
        else:
            n = self.requests
        n = n * self.trials + self.warmup
        return n, n * per


class WorkloadTable(TomlTable):
    """``[workloads.<name>]`` keys every kind reads; each kind's model states its own needs."""

    kind: str
    profile: str | None = None
    api: Annotated[str, check(lambda a: a in APIS[:2], lambda a: (
        f"{a!r}: token-exact workloads use 'generate' or 'completions'"))] = "generate"
    input_tokens: int = Field(ge=1, le=10_000_000)
    output_tokens: int = Field(ge=1, le=1_000_000)
    requests: int = Field(ge=1, le=1_000_000)
    warmup: int = Field(1, ge=0, le=1000)
    trials: int = Field(1, ge=1, le=100)
    seed: int = Field(0, ge=0)
    cache_hit: float = Field(0.0, ge=0.0, le=0.99)
    request_rate: float | None = Field(None, gt=0, le=100_000)
    rates: NumberList = ()
    ttft_slo_s: float | None = Field(None, gt=0)
    request_timeout_s: float = Field(600.0, gt=0, le=86400)
    timeout_s: float | None = Field(None, gt=0, le=7 * 86400)
    stall_timeout_s: float | None = Field(120.0, gt=0, le=86400)
    description: str = ""
    prompts: Annotated[str, one_of(PROMPT_SOURCES, "a prompt source")] = "random"


class SingleStreamTable(WorkloadTable):
    kind: Literal["single_stream"] = "single_stream"


class FixedRateTable(WorkloadTable):
    kind: Literal["fixed_rate"] = "fixed_rate"

    @model_validator(mode="after")
    def _has_a_rate(self) -> FixedRateTable:
        if self.request_rate is None:
            raise problem("request_rate", "a fixed_rate workload needs request_rate (req/s)")
        return self


class RateSweepTable(WorkloadTable):
    kind: Literal["rate_sweep"] = "rate_sweep"

    @model_validator(mode="after")
    def _has_rates_and_an_slo(self) -> RateSweepTable:
        r = self.rates
        if not r or any(x <= 0 for x in r) or list(r) != sorted(r):
            raise problem("rates", "a rate_sweep needs increasing positive rates, e.g. [1.0, 2.0]")
        if self.ttft_slo_s is None:
            raise problem("ttft_slo_s", "a rate_sweep needs the TTFT SLO that defines saturation")
        return self


@dataclass(frozen=True)
class WorkloadKind:
    """One kind of workload, as every stage needs to know it."""

    name: str
    table: type[WorkloadTable]
    # "module:function" running one trial, (base_url, model, vocab, workload, progress,
    # headers) -> a coroutine of its WorkloadResult: loaded when it runs (performance/)
    runner: str
    metrics: tuple[str, ...]  # their facts: config/metric_facts.py
    arrivals: Arrivals


# What every run of requests measures (performance/metrics.py), and the cost beside it.
RUN_METRICS = ("output_speed_tok_s", "output_tok_s", "total_tok_s", "request_throughput",
               "ttft_p50_s", "ttft_p99_s", "ttft_max_s", "tpot_p50_s", "tpot_p99_s",
               "itl_p99_s", "e2e_p50_s", "success_ratio", "cache_hit_ratio", "accept_length",
               "usd_per_mtok", "steady_output_tok_s", "mean_output_tokens")
_RUNNERS = "pytest_rocm_llm.performance.workloads"
SINGLE_STREAM = WorkloadKind("single_stream", SingleStreamTable,
                             f"{_RUNNERS}:run_single_stream", RUN_METRICS, "one_at_a_time")
FIXED_RATE = WorkloadKind("fixed_rate", FixedRateTable, f"{_RUNNERS}:run_fixed_rate",
                          RUN_METRICS, "at_a_rate")
# a sweep also finds the highest rate the node holds, and the output speed at its best step
RATE_SWEEP = WorkloadKind("rate_sweep", RateSweepTable, f"{_RUNNERS}:run_rate_sweep",
                          (*RUN_METRICS, "saturation_rate", "capacity_output_tok_s"),
                          "at_each_rate")

WORKLOADS: Registry[WorkloadKind] = Registry("a workload", "pytest_rocm_llm.workloads", {
    k: f"pytest_rocm_llm.config.workload:{k.upper()}"
    for k in ("single_stream", "fixed_rate", "rate_sweep")})


def metrics_of_workloads() -> tuple[str, ...]:
    """Every metric some workload kind produces, in the kinds' order."""
    return tuple(dict.fromkeys(m for kind in WORKLOADS for m in kind.metrics))


def parse_workload(name: str, t: Table, base: Workload | None = None) -> Workload:
    """A workload from its table; with ``base``, a per-target override of some fields."""
    kind = t.kind(WORKLOADS.names(), "a workload", base)
    schema = WORKLOADS.get(kind).table
    table = validate(schema, t, {**override_of(schema, base, t.data), "kind": kind})
    return Workload(name=name, **table.model_dump())
