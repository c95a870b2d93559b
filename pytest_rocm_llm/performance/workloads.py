"""Workloads declared in suite.toml, and the async runners that drive them.

- single_stream: sequential requests at ISL/OSL after warm-up (Artificial Analysis method).
- fixed_rate: a seeded Poisson arrival schedule at a request rate, ISL/OSL and a target
  prefix-cache hit ratio.
- rate_sweep: fixed_rate at increasing rates until a step breaks the SLO (every request
  succeeds, TTFT max within ttft_slo_s); the last rate that held is the saturation rate, 0
  when the first step broke; the capacity is the highest steady-state output tok/s of a
  step that held. Each step is judged on its own (checks.judge_step): a step the
  client could not send at its rate, or that did not run as declared, ends the sweep as a
  broken precondition instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from pytest_rocm_llm.client.records import RequestRecord
from pytest_rocm_llm.client.streaming import TokenClock, build_payload, stream_request
from pytest_rocm_llm.config.workload import WORKLOADS, Workload
from pytest_rocm_llm.http import async_client
from pytest_rocm_llm.kinds import load
from pytest_rocm_llm.performance.metrics import serving_metrics
from pytest_rocm_llm.performance.preconditions import judge_step
from pytest_rocm_llm.performance.prompts import Vocabulary, poisson_schedule, workload_prompts


@dataclass
class WorkloadResult:
    workload: Workload
    records: list[RequestRecord]
    metrics: dict[str, float | None]
    steps: list[dict[str, Any]] = field(default_factory=list)  # rate_sweep: one per rate
    trials: list[dict[str, float | None]] = field(default_factory=list)  # trials >= 2 only
    # What made the run not what it declared, found while it ran (a sweep step the client
    # could not send); the precondition check reads these.
    problems: list[str] = field(default_factory=list)


Progress = Callable[[str], None]
# One step of a sweep: run_fixed_rate's signature (base_url, model, vocab, w, progress,
# headers, rate).
StepRunner = Callable[..., Awaitable[WorkloadResult]]


def prompt_seed(w: Workload) -> int:
    """The workload's seed mixed with its name: two workloads of a suite with the same seed
    and length must not send identical prompts, or the second is served from the cache the
    first filled."""
    return zlib.crc32(f"{w.name}:{w.seed}".encode())


def _client(base_url: str, w: Workload, concurrency: int,
            headers: Mapping[str, str] | None) -> httpx.AsyncClient:
    return async_client(base_url, timeout_s=w.request_timeout_s, in_flight=concurrency,
                        headers=headers)


# The guard's token clock, seen by every request of the run it guards (a context variable:
# the runners and their step functions keep their signatures).
_CLOCK: contextvars.ContextVar[TokenClock | None] = contextvars.ContextVar("token_clock",
                                                                          default=None)


async def _one(client: httpx.AsyncClient, w: Workload, model: str, prompt: list[int],
               index: int, t0: float) -> RequestRecord:
    path, body = build_payload(w.api, prompt, w.output_tokens, model)
    rec = RequestRecord(index=index, send_s=0.0, expected_output_tokens=w.output_tokens,
                        expected_prompt_tokens=len(prompt))
    clock = _CLOCK.get()
    if clock is not None:
        clock.begin()
    try:
        return await asyncio.wait_for(stream_request(client, w.api, path, body, rec, t0, clock),
                                      timeout=w.request_timeout_s)
    except TimeoutError:
        rec.error = f"request timed out after {w.request_timeout_s:.0f} s"
        return rec
    finally:
        if clock is not None:
            clock.end()


async def run_single_stream(base_url: str, model: str, vocab: Vocabulary, w: Workload,
                            progress: Progress, headers: Mapping[str, str] | None = None
                            ) -> WorkloadResult:
    prompts = workload_prompts(vocab, w.prompts, w.warmup + w.requests, w.input_tokens, 0.0,
                               prompt_seed(w))
    records: list[RequestRecord] = []
    async with _client(base_url, w, 1, headers) as client:
        t0 = time.perf_counter()
        for i, prompt in enumerate(prompts):
            if i == w.warmup:
                # The clock starts after the warm-up: whole-run rates (output_tok_s, request
                # throughput, total tok/s) are over the measured requests' wall time only;
                # timed from before the warm-up they read ~9% low at 1 warm-up + 10 requests.
                t0 = time.perf_counter()
            rec = await _one(client, w, model, prompt, i, t0)
            label = "warm-up" if i < w.warmup else f"{i - w.warmup + 1}/{w.requests}"
            speed = rec.output_speed_tok_s
            progress(f"[rocm-llm] {w.name}: request {label}: "
                     + (f"{speed:.1f} tok/s, TTFT {rec.ttft_s:.2f} s" if speed else
                        f"failed: {rec.error}"))
            if i >= w.warmup:
                records.append(rec)
        duration = time.perf_counter() - t0
    return WorkloadResult(w, records, serving_metrics(records, duration))


async def run_fixed_rate(base_url: str, model: str, vocab: Vocabulary, w: Workload,
                         progress: Progress, headers: Mapping[str, str] | None = None,
                         rate: float | None = None) -> WorkloadResult:
    rate = rate or w.request_rate
    assert rate is not None
    prompts = workload_prompts(vocab, w.prompts, w.warmup + w.requests, w.input_tokens,
                               w.cache_hit, prompt_seed(w))
    schedule = poisson_schedule(w.requests, rate, w.seed)
    async with _client(base_url, w, w.requests, headers) as client:
        # Warm-up requests go first and serially: they also seed the shared prefix, so the
        # measured window sees the steady-state cache-hit ratio.
        for i in range(w.warmup):
            await _one(client, w, model, prompts[i], -1 - i, time.perf_counter())
        t0 = time.perf_counter()
        done = 0

        async def fire(i: int, at: float) -> RequestRecord:
            nonlocal done
            delay = at - (time.perf_counter() - t0)
            if delay > 0:
                await asyncio.sleep(delay)
            rec = await _one(client, w, model, prompts[w.warmup + i], i, t0)
            done += 1
            if done % max(1, w.requests // 5) == 0 or done == w.requests:
                progress(f"[rocm-llm] {w.name}: {done}/{w.requests} requests done "
                         f"at {rate:g} req/s")
            return rec

        records = await asyncio.gather(*(fire(i, at) for i, at in enumerate(schedule)))
        duration = time.perf_counter() - t0
    return WorkloadResult(w, list(records), serving_metrics(records, duration))


async def run_rate_sweep(base_url: str, model: str, vocab: Vocabulary, w: Workload,
                         progress: Progress, headers: Mapping[str, str] | None = None,
                         run_step: StepRunner = run_fixed_rate) -> WorkloadResult:
    steps: list[dict[str, Any]] = []
    problems: list[str] = []
    held: list[WorkloadResult] = []
    first: WorkloadResult | None = None
    for n, rate in enumerate(w.rates):
        # A new seed per step (fresh prompts and prefix); each step warms its own prefix.
        step_w = replace(w, seed=w.seed + n)
        res = await run_step(base_url, model, vocab, step_w, progress, headers, rate)
        first = first or res
        step = judge_step(w, rate, res.metrics, res.records)
        steps.append(step)
        m = res.metrics
        progress(f"[rocm-llm] {w.name}: {rate:g} req/s: TTFT max {m['ttft_max_s'] or 0:.2f} s, "
                 f"{m['output_tok_s'] or 0:.1f} tok/s -> "
                 + "; ".join(step["problems"] or step["slo_breaches"] or ["held"]))
        if step["status"] == "invalid":
            problems += [f"step {rate:g} req/s: {p}" for p in step["problems"]]
            break
        if step["status"] == "broken":
            break
        held.append(res)
    # The sweep's figures are those at its saturation point. A first step the server could
    # not hold saturates below every offered rate: 0, a measured value that fails any floor
    # the sweep can show, not a missing one. A step the client could not send leaves
    # saturation unknown.
    last = held[-1] if held else None
    metrics: dict[str, float | None] = dict(last.metrics) if last else {}
    if problems:
        metrics["saturation_rate"] = None
    else:
        metrics["saturation_rate"] = w.rates[len(held) - 1] if held else 0.0
    metrics.update(capacity(steps, bool(problems)))
    records = last.records if last else first.records if first else []
    return WorkloadResult(w, records, metrics, steps, problems=problems)


CAPACITY_KEYS = ("capacity_output_tok_s", "capacity_rate", "capacity_mean_output_tokens",
                 "capacity_window_s")


def capacity(steps: list[dict[str, Any]], invalid: bool) -> dict[str, float | None]:
    """The node's output capacity within the SLO: the highest steady-state output tok/s of
    a step that held it, with that step's rate, realized mean output tokens per request and
    window length beside it (rate x mean output tokens is what the step offered). No step
    held: 0, a measured regression like a saturation rate of 0. Unknown (None) when a step
    did not run as declared, or a step that held had no steady state to measure (arrivals
    shorter than one request lifetime): the highest might be the one not measured."""
    none: dict[str, float | None] = dict.fromkeys(CAPACITY_KEYS)
    held = [s for s in steps if s["held"]]
    if invalid:
        return none
    if not held:
        return {**none, "capacity_output_tok_s": 0.0}
    if any(s.get("steady_output_tok_s") is None for s in held):
        return none
    best = max(held, key=lambda s: s["steady_output_tok_s"])
    return {"capacity_output_tok_s": best["steady_output_tok_s"], "capacity_rate": best["rate"],
            "capacity_mean_output_tokens": best.get("mean_output_tokens"),
            "capacity_window_s": best.get("steady_window_s")}


class WorkloadTimeout(TimeoutError):
    """The whole run exceeded the workload's ``timeout_s`` (the server hangs)."""


class WorkloadStalled(TimeoutError):
    """Requests were in flight for ``stall_timeout_s`` without a token (the server hangs)."""


async def _guarded(w: Workload, runner: Any, watch: Callable[[], None] | None,
                   poll_s: float, first_token_stall_s: float | None = None) -> WorkloadResult:
    """Run ``runner`` while polling ``watch`` (raises when the server is gone), token
    progress and the workload's time bound: a dead or hung server ends the run at once,
    instead of after every remaining scheduled request has failed against it. ``runner``
    must be a coroutine not yet started: its requests report to this guard's token clock.
    Until the run's first token the stall bound is at least ``first_token_stall_s`` (a GPU
    target's: a fresh container compiles its kernels inside the first batches)."""
    clock = TokenClock(time.perf_counter())
    began = clock.last_token
    token = _CLOCK.set(clock)
    try:
        task = asyncio.ensure_future(runner)  # the task copies the context: it sees the clock
    finally:
        _CLOCK.reset(token)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + w.timeout_s if w.timeout_s else None
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=poll_s)
            if done:
                return task.result()
            if watch is not None:
                watch()
            stalled = clock.stalled_s(time.perf_counter())
            bound, why = w.stall_timeout_s, ""
            if (bound is not None and first_token_stall_s and clock.last_token <= began
                    and first_token_stall_s > bound):
                bound, why = first_token_stall_s, (
                    f"; before the first token the target allows {first_token_stall_s:g} s "
                    "for a cold kernel JIT")
            if bound is not None and stalled >= bound:
                n = clock.in_flight
                raise WorkloadStalled(
                    f"workload {w.name}: no token progress for {stalled:.1f} s with {n} "
                    f"request{'s' if n != 1 else ''} in flight "
                    f"(stall_timeout_s = {w.stall_timeout_s:g} s{why})")
            if deadline is not None and loop.time() > deadline:
                raise WorkloadTimeout(f"workload {w.name} did not finish within its "
                                      f"timeout_s = {w.timeout_s:g} s")
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def run_workload(base_url: str, model: str, vocab: Vocabulary, w: Workload,
                 progress: Progress, headers: Mapping[str, str] | None = None,
                 watch: Callable[[], None] | None = None, poll_s: float = 1.0,
                 first_token_stall_s: float | None = None) -> WorkloadResult:
    """Run ``w`` (``trials`` times, fresh prompts each); ``watch`` is called every
    ``poll_s`` and aborts the run by raising; ``first_token_stall_s``: see ``_guarded``."""
    def once(wl: Workload) -> WorkloadResult:
        run = load(WORKLOADS.get(wl.kind).runner)
        runner = run(base_url, model, vocab, wl, progress, headers)  # type: ignore[operator]
        return asyncio.run(_guarded(wl, runner, watch, poll_s, first_token_stall_s))

    if w.trials == 1:
        return once(w)
    results = []
    for t in range(w.trials):
        # Fresh prompts per trial: a repeat of the same prompts would be served from cache.
        progress(f"[rocm-llm] {w.name}: trial {t + 1}/{w.trials}")
        results.append(once(replace(w, seed=w.seed + 7919 * t, trials=1)))
    trials = [r.metrics for r in results]
    metrics: dict[str, float | None] = {}
    for key in trials[0]:
        values = [m[key] for m in trials if m.get(key) is not None]
        # A metric some trial could not produce is missing, not averaged over fewer trials.
        metrics[key] = sum(values) / len(values) if len(values) == len(trials) else None
    records = [rec for r in results for rec in r.records]
    problems = [f"trial {t + 1}: {p}" for t, r in enumerate(results) for p in r.problems]
    return WorkloadResult(w, records, metrics, results[-1].steps, trials, problems)
