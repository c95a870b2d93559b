"""The progress watchdog (issue 15 item 5): requests in flight with no streamed token for the
workload's ``stall_timeout_s`` end the run with a named stall, within stall_timeout_s plus one
poll, against a real HTTP server (in-process, asyncio) that streams a few tokens and stops."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pytest_rocm_llm.client.streaming import TokenClock
from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.performance.prompts import Vocabulary
from pytest_rocm_llm.performance.workloads import WorkloadStalled, WorkloadTimeout, run_workload

VOCAB = Vocabulary(np.arange(10, 500), Path("vocab"))
W = Workload(name="w", kind="single_stream", profile=None, api="generate", input_tokens=8,
             output_tokens=4, requests=1, warmup=0, request_timeout_s=60.0, timeout_s=60.0,
             stall_timeout_s=0.6)
POLL_S = 0.05


def event(n: int) -> bytes:
    meta = {"prompt_tokens": 8, "completion_tokens": n, "finish_reason": None}
    return b"data: " + json.dumps({"text": "x" * n, "meta_info": meta}).encode() + b"\n\n"


@contextmanager
def stalling_server(tokens: int, gap_s: float = 0.0, stall: bool = True
                    ) -> Iterator[tuple[str, list[float]]]:
    """Streams ``tokens`` events ``gap_s`` apart per request, then hangs (``stall``) or ends
    the stream. Yields the base URL and the times (perf_counter) of the last event sent."""
    sent: list[float] = []
    loop = asyncio.new_event_loop()
    hold = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length"))
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")

        def chunk(data: bytes) -> None:
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))

        for n in range(1, tokens + 1):
            if n > 1:
                await asyncio.sleep(gap_s)
            chunk(event(n))
            await writer.drain()
            sent.append(time.perf_counter())
        if stall:
            await hold.wait()
        chunk(b"data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", 0))
    port = server.sockets[0].getsockname()[1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}", sent
    finally:
        async def shutdown() -> None:
            server.close()
            handlers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in handlers:
                t.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def test_a_stream_that_stops_is_a_named_stall_within_the_bound() -> None:
    with stalling_server(tokens=2) as (url, sent):
        with pytest.raises(WorkloadStalled) as info:
            run_workload(url, "m", VOCAB, W, lambda m: None, poll_s=POLL_S)
        failed_after = time.perf_counter() - sent[-1]
    # the message reports the idle time it saw, which a busy host can round up to 0.7 s
    said = re.fullmatch(r"workload w: no token progress for (\d+\.\d) s with 1 request in "
                        r"flight \(stall_timeout_s = 0\.6 s\)", str(info.value))
    assert said, info.value
    assert W.stall_timeout_s <= float(said[1]) <= W.stall_timeout_s + POLL_S + 0.25, info.value
    assert W.stall_timeout_s <= failed_after <= W.stall_timeout_s + POLL_S + 0.25, failed_after


def test_concurrent_requests_are_counted_in_flight() -> None:
    w = replace(W, kind="fixed_rate", requests=3, request_rate=1000.0)
    with stalling_server(tokens=1) as (url, _), pytest.raises(WorkloadStalled) as info:
        run_workload(url, "m", VOCAB, w, lambda m: None, poll_s=POLL_S)
    assert "with 3 requests in flight" in str(info.value)


def test_slow_but_steady_tokens_are_not_a_stall() -> None:
    # 6 tokens 0.3 s apart: 1.5 s of streaming, longer than stall_timeout_s, never 0.6 s idle
    w = replace(W, output_tokens=6)
    with stalling_server(tokens=6, gap_s=0.3, stall=False) as (url, _):
        result = run_workload(url, "m", VOCAB, w, lambda m: None, poll_s=POLL_S)
    assert [r.ok for r in result.records] == [True]


def test_requests_that_time_out_without_a_token_add_up_to_a_stall() -> None:
    # each request gives up after 0.25 s; none gets a token: the third is in flight at 0.6 s
    w = replace(W, requests=10, request_timeout_s=0.25)
    t0 = time.perf_counter()
    with stalling_server(tokens=0) as (url, _), pytest.raises(WorkloadStalled):
        run_workload(url, "m", VOCAB, w, lambda m: None, poll_s=POLL_S)
    assert time.perf_counter() - t0 <= 0.6 + POLL_S + 0.5


def test_no_stall_bound_leaves_the_workload_bound() -> None:
    w = replace(W, stall_timeout_s=None, timeout_s=0.5)
    with stalling_server(tokens=1) as (url, _), pytest.raises(WorkloadTimeout):
        run_workload(url, "m", VOCAB, w, lambda m: None, poll_s=POLL_S)


def test_the_clock_counts_only_in_flight_time_since_the_last_token() -> None:
    clock = TokenClock(0.0)
    assert clock.stalled_s(5.0) == 0.0          # nothing in flight: idle is not a stall
    clock.in_flight = 1
    clock._mark = 5.0
    assert clock.stalled_s(7.0) == 2.0
    clock.last_token = 7.5                      # the hot path's only store
    assert clock.stalled_s(8.0) == 0.5
    clock.in_flight = 0
    assert clock.stalled_s(20.0) == 0.5         # a pause between requests adds nothing
    clock.in_flight = 1
    assert clock.stalled_s(21.0) == 1.5


def test_stall_timeout_s_is_validated_and_defaults_to_120() -> None:
    import tomllib

    from pytest_rocm_llm.config.toml import Table
    from pytest_rocm_llm.config.workload import parse_workload

    base = 'kind = "single_stream"\ninput_tokens = 8\noutput_tokens = 2\nrequests = 1\n'
    w = parse_workload("w", Table(tomllib.loads(base), Path("suite.toml"), "workloads.w"))
    assert w.stall_timeout_s == 120.0
    w = parse_workload("w", Table(tomllib.loads(base + "stall_timeout_s = 6"),
                                  Path("suite.toml"), "workloads.w"))
    assert w.stall_timeout_s == 6
    with pytest.raises(Exception, match="key 'workloads.w.stall_timeout_s'"):
        parse_workload("w", Table(tomllib.loads(base + "stall_timeout_s = 0"),
                                  Path("suite.toml"), "workloads.w"))


def test_before_the_first_token_a_gpu_target_allows_a_cold_jit() -> None:
    """A fresh container compiles kernels inside its first batches: until the run's first
    token the bound is the target's first_token_stall_s (ROCm targets: 900 s), after it the
    workload's own."""
    from pytest_rocm_llm.config.targets import TARGETS

    assert TARGETS["mi355x"].first_token_stall_s == 900.0
    assert TARGETS["cpu"].first_token_stall_s is None
    assert TARGETS["mi355x"].engine_flags["sglang"]["watchdog-timeout"] == 1800
    # no token at all: the larger bound holds, and the message says which bound it was
    t0 = time.perf_counter()
    with stalling_server(tokens=0) as (url, _), pytest.raises(WorkloadStalled) as info:
        run_workload(url, "m", VOCAB, W, lambda m: None, poll_s=POLL_S,
                     first_token_stall_s=1.5)
    assert 1.5 <= time.perf_counter() - t0 <= 1.5 + POLL_S + 0.5
    assert "before the first token the target allows 1.5 s for a cold kernel JIT" in str(
        info.value)
    # after a token, the workload's own 0.6 s again
    with stalling_server(tokens=2) as (url, sent), pytest.raises(WorkloadStalled) as info:
        run_workload(url, "m", VOCAB, W, lambda m: None, poll_s=POLL_S,
                     first_token_stall_s=30.0)
    assert time.perf_counter() - sent[-1] <= W.stall_timeout_s + POLL_S + 0.25
    assert "cold kernel JIT" not in str(info.value)
