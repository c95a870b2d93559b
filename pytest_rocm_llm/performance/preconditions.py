"""Did a run do what its workload declared? Every request succeeded, the offered rate was
kept, the prefix-cache hit target was shown, every prompt and output had its forced length.
A floor is asserted only when these hold (verdicts/checks.py); a rate sweep judges each
step with them as it runs (``judge_step``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_rocm_llm.client.records import RequestRecord
from pytest_rocm_llm.config.workload import Workload

RATE_TOLERANCE = 0.05  # relative
CACHE_TOLERANCE = 0.05  # absolute (5 points)


def failed_requests(recs: Sequence[RequestRecord]) -> str | None:
    failed = [r for r in recs if not r.ok]
    if not failed:
        return None
    return (f"{len(failed)}/{len(recs)} requests failed "
            f"(first: request {failed[0].index}: {failed[0].error})")


def run_problems(w: Workload, m: Mapping[str, float | None], recs: Sequence[RequestRecord],
                  rate: float | None) -> list[str]:
    """What the client or the workload's shape got wrong (never a request the server failed):
    outputs and prompts off their forced length, the offered rate not kept, the cache-hit
    target not shown."""
    problems = []
    ok = [r for r in recs if r.ok]
    short = [r for r in ok if r.completion_tokens != r.expected_output_tokens]
    if short:
        problems.append(f"{len(short)} outputs not at the forced length {w.output_tokens} "
                        f"(e.g. {short[0].completion_tokens} tokens)")
    bad_prompts = [r for r in ok if r.prompt_tokens != r.expected_prompt_tokens]
    if bad_prompts:
        problems.append(f"{len(bad_prompts)} prompts not at {w.input_tokens} tokens "
                        f"(server counted {bad_prompts[0].prompt_tokens})")
    if rate:
        achieved = m.get("achieved_request_rate")
        if achieved is None or abs(achieved - rate) > RATE_TOLERANCE * rate:
            problems.append(f"achieved request rate {achieved or 0:.3f} req/s is not within "
                            f"{RATE_TOLERANCE:.0%} of the target {rate:g} req/s")
    # With no successful request there is no cache report to read: that run is the
    # server's failure, named as such, not a missing --enable-cache-report.
    if w.arrivals != "one_at_a_time" and w.cache_hit > 0 and ok:
        hit = m.get("cache_hit_ratio")
        if hit is None:
            problems.append("the server reported no cached_tokens (sglang: "
                            "--enable-cache-report), so the cache-hit target cannot be shown")
        elif abs(hit - w.cache_hit) > CACHE_TOLERANCE:
            problems.append(f"achieved prefix-cache hit ratio {hit:.1%} is not within "
                            f"{CACHE_TOLERANCE * 100:.0f} points of the target {w.cache_hit:.0%}")
    return problems


def judge_step(w: Workload, rate: float, m: Mapping[str, float | None],
               recs: Sequence[RequestRecord]) -> dict[str, Any]:
    """One step of a rate sweep, judged on its own: ``invalid`` when it did not run as
    declared (the step says nothing about ``rate``), else ``held`` or ``broken`` by the SLO
    (every request succeeded, TTFT max within ``ttft_slo_s``)."""
    problems = run_problems(w, m, recs, None) if recs else ["the step produced no requests"]
    achieved = m.get("achieved_request_rate")
    # send_s is stamped before the connection opens, so a late send is the load generator
    # falling behind its schedule, never the server being slow.
    if recs and (achieved is None or achieved < (1 - RATE_TOLERANCE) * rate):
        problems.insert(0, f"the client sent at {achieved or 0:.3f} req/s, not within "
                           f"{RATE_TOLERANCE:.0%} of the offered {rate:g} req/s (the load "
                           "generator fell behind its schedule)")
    breaches = []
    failed = failed_requests(recs)
    if failed:
        breaches.append(failed)
    slo, ttft = w.ttft_slo_s or 0.0, m.get("ttft_max_s")
    if ttft is not None and ttft > slo:
        breaches.append(f"TTFT max {ttft:.2f} s is over the SLO {slo:g} s")
    status = "invalid" if problems else "broken" if breaches else "held"
    return {"rate": rate, "status": status, "held": status == "held", "problems": problems,
            "slo_breaches": breaches, **m}
