"""Workload definitions in suite.toml: what to send, how fast, and how big.

Kept apart from the runners so that parsing a suite imports neither numpy nor an HTTP stack.
Each kind is a pydantic model (``TABLES``); ``parse_workload`` looks the kind up there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from pytest_rocm_llm.config.fields import NumberList, check, one_of
from pytest_rocm_llm.config.toml import Table, TomlTable, override_of, problem, validate

APIS = ("generate", "completions", "chat")
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
    def expected_tokens(self) -> tuple[int, int]:
        """(requests, prompt + output tokens) this workload sends, warm-up included."""
        per = self.input_tokens + self.output_tokens
        if self.kind == "rate_sweep":
            n = self.requests * len(self.rates)
        else:
            n = self.requests
        n = n * self.trials + self.warmup
        return n, n * per


class _WorkloadTable(TomlTable):
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


class SingleStreamTable(_WorkloadTable):
    kind: Literal["single_stream"] = "single_stream"


class FixedRateTable(_WorkloadTable):
    kind: Literal["fixed_rate"] = "fixed_rate"

    @model_validator(mode="after")
    def _has_a_rate(self) -> FixedRateTable:
        if self.request_rate is None:
            raise problem("request_rate", "a fixed_rate workload needs request_rate (req/s)")
        return self


class RateSweepTable(_WorkloadTable):
    kind: Literal["rate_sweep"] = "rate_sweep"

    @model_validator(mode="after")
    def _has_rates_and_an_slo(self) -> RateSweepTable:
        r = self.rates
        if not r or any(x <= 0 for x in r) or list(r) != sorted(r):
            raise problem("rates", "a rate_sweep needs increasing positive rates, e.g. [1.0, 2.0]")
        if self.ttft_slo_s is None:
            raise problem("ttft_slo_s", "a rate_sweep needs the TTFT SLO that defines saturation")
        return self


# kind -> its table: a new workload kind is one model here (and its runner), no branch in
# the parser.
TABLES: dict[str, type[_WorkloadTable]] = {
    "single_stream": SingleStreamTable, "fixed_rate": FixedRateTable,
    "rate_sweep": RateSweepTable}
KINDS = tuple(TABLES)


def parse_workload(name: str, t: Table, base: Workload | None = None) -> Workload:
    """A workload from its table; with ``base``, a per-target override of some fields."""
    kind = t.kind(KINDS, "a workload", base)
    schema = TABLES[kind]
    table = validate(schema, t, {**override_of(schema, base, t.data), "kind": kind})
    return Workload(name=name, **table.model_dump())
