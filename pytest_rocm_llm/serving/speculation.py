"""The speculative accept length of a given set of requests, never of a server's lifetime.

Accept length is tokens per verify step, the bonus token included: sglang's
completion_tokens / spec_verify_ct, vLLM's 1 + accepted / drafts (a vLLM draft is one verify
step of one request; it yields its accepted tokens plus one). A server's since-start figure
(sglang's ``avg_spec_accept_length``, vLLM's counters read once) mixes in whatever ran on it
before -- in glm52 the decode workload runs first on the speculative server -- so a run is
measured from its own requests: per request where the API reports it (sglang's
``meta_info.spec_verify_ct``), else as the difference of the server's counters read right
before and right after the run (vLLM, whose completions carry no per-request figure; the
difference is the run's own only while nothing else talks to that server, as in a session).

Every source sglang offers is read, and where more than one is present they must agree:
- per request, ``meta_info`` under the names sglang 0.5.x releases used: ``spec_verify_ct``
  (verify steps); ``spec_accept_length`` (completion / steps); accepted draft tokens as
  ``spec_num_correct_drafts`` (0.5.23) or ``spec_accept_token_num`` (earlier 0.5.x), from
  which steps = completion - accepted (each step emits its accepted drafts plus one);
- over a run, the Prometheus counters of ``/metrics`` (``--enable-metrics``):
  ``sglang:generation_tokens_total`` over ``sglang:spec_verify_calls_total``, read before and
  after (sglang 0.5.23 observability/metrics_collector.py).
A disagreement is a problem of the run (which figure is right is unknown), never a value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

# Relative disagreement tolerated between two sources of one accept length: a request cut at
# max_tokens mid-step can count accepted drafts it did not emit, and a counter may include a
# request that finished without a verify step.
AGREE = 0.02
SGLANG_TOKENS = "sglang:generation_tokens"  # counters, as prometheus_client names families
SGLANG_VERIFY = "sglang:spec_verify_calls"


class VerifiedRequest(Protocol):
    """What a request's answer tells of speculation (``client.completions.GreedyGeneration``
    has it; serving sits below the client layer, so it names the fields, not the class)."""

    @property
    def ok(self) -> bool: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def spec_verify_ct(self) -> int | None: ...


@dataclass(frozen=True)
class SpecCounters:
    tokens: float  # emitted by verify steps, bonus tokens included
    steps: float  # verify steps

    def __sub__(self, earlier: SpecCounters) -> SpecCounters:
        return SpecCounters(self.tokens - earlier.tokens, self.steps - earlier.steps)

    @property
    def accept_length(self) -> float | None:
        """None without a verify step (a server restarted in between shows as none too)."""
        return self.tokens / self.steps if self.steps > 0 else None


def from_generations(gens: Iterable[VerifiedRequest]) -> SpecCounters | None:
    """Summed over the requests that report speculation; None when none does (the API has
    no per-request figure, or the server did not speculate)."""
    verified = [g for g in gens if g.ok and g.spec_verify_ct]
    if not verified:
        return None
    return SpecCounters(float(sum(g.completion_tokens for g in verified)),
                        float(sum(g.spec_verify_ct or 0 for g in verified)))


def between(before: SpecCounters | None, after: SpecCounters | None) -> SpecCounters | None:
    """What happened between two readings of a server's counters."""
    return None if before is None or after is None else after - before


def steps_by_source(meta: Mapping[str, Any], completion_tokens: int) -> dict[str, float]:
    """Verify steps of one request from each meta_info field present (sglang 0.5.x names)."""
    out: dict[str, float] = {}
    if meta.get("spec_verify_ct"):
        out["spec_verify_ct"] = float(meta["spec_verify_ct"])
    length = meta.get("spec_accept_length")
    if length and completion_tokens:
        out["spec_accept_length"] = completion_tokens / float(length)
    for name in ("spec_num_correct_drafts", "spec_accept_token_num"):
        if meta.get(name) is not None and completion_tokens and "spec_verify_ct" in out:
            # accepted drafts alone say nothing without speculation having happened
            out[name] = float(completion_tokens - int(meta[name]))
    return out


def disagreement(figures: Mapping[str, float], what: str) -> str | None:
    """None when every figure is within AGREE of the first; else the figures, named."""
    values = list(figures.values())
    if len(values) < 2 or all(abs(v - values[0]) <= AGREE * abs(values[0]) for v in values):
        return None
    shown = ", ".join(f"{k} {v:.4g}" for k, v in figures.items())
    return f"{what} disagree beyond {AGREE:.0%}: {shown}"


def verify_steps(meta: Mapping[str, Any], completion_tokens: int) -> tuple[int | None,
                                                                           str | None]:
    """(verify steps of one request, or None; why its fields disagree, or None)."""
    steps = steps_by_source(meta, completion_tokens)
    if not steps:
        return None, None
    first = next(iter(steps.values()))
    return round(first), disagreement(steps, "verify steps by meta_info field")


def sglang_counters(text: str) -> SpecCounters | None:
    """sglang's generated tokens and verify calls since start in a Prometheus exposition,
    summed over every label set (DP ranks, streaming or not); None without verify calls."""
    from prometheus_client.parser import text_string_to_metric_families

    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name in (SGLANG_TOKENS, SGLANG_VERIFY):
            totals[family.name] = sum(x.value for x in family.samples
                                      if x.name == family.name + "_total")
    if not totals.get(SGLANG_VERIFY):
        return None
    return SpecCounters(totals.get(SGLANG_TOKENS, 0.0), totals[SGLANG_VERIFY])
