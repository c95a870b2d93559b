"""Workload definitions in suite.toml: what to send, how fast, and how big.

Kept apart from the runners so that parsing a suite imports neither numpy nor an HTTP stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_rocm_llm.config.toml import REQUIRED, Table

APIS = ("generate", "completions", "chat")

KINDS = ("single_stream", "fixed_rate", "rate_sweep")


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


def parse_workload(name: str, t: Table, base: Workload | None = None) -> Workload:
    """A workload from its table; with ``base``, a per-target override of some fields."""

    def d(key: str, fallback: Any = REQUIRED) -> Any:
        return getattr(base, key) if base is not None else fallback

    kind = t.string("kind", d("kind"))
    if kind not in KINDS:
        t.fail("kind", f"{kind!r} is not a workload kind ({', '.join(KINDS)})")
    w = Workload(
        name=name,
        kind=kind,
        profile=t.string("profile", d("profile", None)),
        api=t.string("api", d("api", "generate")),
        input_tokens=t.number("input_tokens", d("input_tokens"), integer=True, minimum=1,
                              maximum=10_000_000),
        output_tokens=t.number("output_tokens", d("output_tokens"), integer=True, minimum=1,
                               maximum=1_000_000),
        requests=t.number("requests", d("requests"), integer=True, minimum=1,
                          maximum=1_000_000),
        warmup=t.number("warmup", d("warmup", 1), integer=True, minimum=0, maximum=1000),
        trials=t.number("trials", d("trials", 1), integer=True, minimum=1, maximum=100),
        seed=t.number("seed", d("seed", 0), integer=True, minimum=0),
        cache_hit=t.number("cache_hit", d("cache_hit", 0.0), minimum=0.0, maximum=0.99),
        request_rate=t.number("request_rate", d("request_rate", None), minimum=0,
                              exclusive_minimum=True, maximum=100_000),
        rates=t.number_list("rates", d("rates", ())),
        ttft_slo_s=t.number("ttft_slo_s", d("ttft_slo_s", None), minimum=0,
                            exclusive_minimum=True),
        request_timeout_s=t.number("request_timeout_s", d("request_timeout_s", 600.0),
                                   minimum=0, exclusive_minimum=True, maximum=86400),
        timeout_s=t.number("timeout_s", d("timeout_s", None), minimum=0,
                           exclusive_minimum=True, maximum=7 * 86400),
        stall_timeout_s=t.number("stall_timeout_s", d("stall_timeout_s", 120.0), minimum=0,
                                 exclusive_minimum=True, maximum=86400),
        description=t.string("description", d("description", "")),
    )
    if w.api not in APIS[:2]:
        t.fail("api", f"{w.api!r}: token-exact workloads use 'generate' or 'completions'")
    if w.kind == "fixed_rate" and w.request_rate is None:
        t.fail("request_rate", "a fixed_rate workload needs request_rate (req/s)")
    if w.kind == "rate_sweep":
        if not w.rates or any(r <= 0 for r in w.rates) or list(w.rates) != sorted(w.rates):
            t.fail("rates", "a rate_sweep needs increasing positive rates, e.g. [1.0, 2.0]")
        if w.ttft_slo_s is None:
            t.fail("ttft_slo_s", "a rate_sweep needs the TTFT SLO that defines saturation")
    t.done()
    return w
