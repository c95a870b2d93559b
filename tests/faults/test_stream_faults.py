"""Broken streams through a whole suite run: malformed, truncated and empty streams, HTTP 5xx
mid-run and a slow drip must be failed requests (never zero latency or infinite speed), and
the success-ratio precondition must stop the checks from judging the run.

TEST DOUBLE: sglang cannot be made to produce these streams on demand, so a small local HTTP
server here speaks sglang's native ``/generate`` stream format (``data: {json}`` events with
``meta_info``, ending ``data: [DONE]``) and the suite attaches to it with ``--llm-endpoint``.
Everything else (workload runner, metrics, checks) is the plugin's real path.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import SMOKE_MODEL

BEHAVIOURS = ("ok", "malformed", "truncated", "empty", "http_503", "slow_drip")

SUITE = f"""
[suite]
name = "streams"
{SMOKE_MODEL}
[profiles.default]

[workloads.broken]
kind = "fixed_rate"
input_tokens = 16
output_tokens = 4
requests = {2 * len(BEHAVIOURS)}
request_rate = 4.0
warmup = 0
request_timeout_s = 2

[checks.throughput]
workload = "broken"
metric = "output_tok_s"
min = 0.001
source = "any output at all"

[checks.ttft]
workload = "broken"
metric = "ttft_max_s"
max = 1000
source = "any latency at all"
"""

TESTS = """

def test_performance(llm_check, llm_judge):
    llm_judge(llm_check)
"""


def event(n: int, prompt: int) -> bytes:
    meta = {"prompt_tokens": prompt, "completion_tokens": n, "cached_tokens": 0,
            "finish_reason": {"type": "length"} if n == 4 else None}
    return b"data: " + json.dumps({"text": "x" * n, "meta_info": meta}).encode() + b"\n\n"


class Double(BaseHTTPRequestHandler):
    """Request n (in arrival order) behaves as BEHAVIOURS[n % len(BEHAVIOURS)]."""

    counter = itertools.count()
    lock = threading.Lock()

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = json.dumps({"version": "double-0.0.0", "served_model_name": "double",
                           "model_path": "unused"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = len(payload["input_ids"])
        with self.lock:
            kind = BEHAVIOURS[next(self.counter) % len(BEHAVIOURS)]
        if kind == "http_503":
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"overloaded")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()  # no length: the body ends when the connection closes
        if kind == "ok":
            self.wfile.write(b"".join(event(n, prompt) for n in range(1, 5)) + b"data: [DONE]\n\n")
        elif kind == "malformed":
            self.wfile.write(event(1, prompt) + b"data: {\"meta_info\": {oops\n\n")
        elif kind == "truncated":
            self.wfile.write(event(1, prompt) + event(2, prompt))
        elif kind == "slow_drip":
            for n in range(1, 5):
                self.wfile.write(event(n, prompt))
                self.wfile.flush()
                time.sleep(1.5)
        # "empty": a 200 with no body at all


@pytest.fixture
def double() -> Iterator[str]:
    Double.counter = itertools.count()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Double)
    server.protocol_version = "HTTP/1.0"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.engine  # needs the CPU reference model's tokenizer (no engine is launched)
def test_broken_streams_are_failed_requests(pytester: pytest.Pytester, suite_dir,
                                            reference_model_dir: Path, double: str,
                                            fault) -> None:
    suite_dir(SUITE, {"test_perf.py": TESTS}, name="streams")
    result = pytester.runpytest_subprocess(
        "--rocm-target", "cpu", "-p", "no:cacheprovider", "--llm-endpoint", double,
        "--llm-model-path", str(reference_model_dir), timeout=300)
    out = result.stdout.str()
    result.assert_outcomes(failed=2)
    n = 2 * len(BEHAVIOURS)
    # both checks stop at the success-ratio precondition, neither judges a number
    # Counted in the failure sections only: under CI=true pytest's short summary repeats
    # each message in full.
    judged = re.findall(r"^E\s+pytest_rocm_llm\.verdicts\.checks\.PreconditionNotMet: "
                        r"precondition not met: \w+: broken did not do what the check assumes",
                        out, re.M)
    assert len(judged) == 2, out
    assert f"{n - 2}/{n} requests failed" in out
    assert "FloorMissed" not in out
    metrics = json.loads(next(pytester.path.rglob("streams-broken.json")).read_text())["metrics"]
    assert metrics["requests"] == n and metrics["succeeded"] == 2
    assert metrics["success_ratio"] == pytest.approx(2 / n)
    for key in ("output_tok_s", "ttft_max_s", "output_speed_tok_s", "tpot_p50_s"):
        value = metrics[key]
        assert value is not None and math.isfinite(value) and value > 0, (key, value)
    with open(next(pytester.path.rglob("streams-broken.csv"))) as fh:
        rows = list(csv.DictReader(fh))
    failed = [r for r in rows if r["ok"] != "True"]
    assert len(failed) == n - 2
    # a failed request carries no latency: never zero, never a throughput
    assert all(r["ttft_s"] == "" or float(r["ttft_s"]) > 0 for r in failed)
    assert all(r["e2e_s"] == "" for r in failed if "timed out" in r["error"])
    assert all(r["tpot_s"] == "" and r["output_speed_tok_s"] == "" for r in failed)
    errors = " | ".join(r["error"] for r in failed)
    for expected in ("malformed stream event", "truncated", "HTTP 503", "timed out"):
        assert expected in errors, errors
    fault.assert_no_leak(within_s=5)
