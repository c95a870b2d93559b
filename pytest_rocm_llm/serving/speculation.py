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
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


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
