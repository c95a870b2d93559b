"""A toy greedy language model behind real HTTP: sglang's ``/generate`` + ``/server_info``
and vLLM's ``/v1/completions`` + ``/metrics``, shaped as tests/test_completions.py records
them, so parity runs through the production path (EvalRuns, httpx, the parsers, the
engines' counter readers) with outputs whose every logprob is known.

The model is autoregressive for real: the next token depends only on the context, so a
request that continues from any prefix gets the same answer a longer request would have.
Output tokens are 0..7; a context whose last token is >= 8 is a prompt's end (the natural
prompts never end in ids that small), which is where a scenario plants its near tie.
"""

from __future__ import annotations

import json
import math
import random
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

V = 8
TIE_GAP = 0.05  # the planted near tie, as the reference sees it (within a 0.1 tolerance)


@dataclass
class Toy:
    plant_tie: bool = False  # the prompt's first output token has a runner-up TIE_GAP below
    bias: float = 0.0  # added to that runner-up's logit on this side (0.06 flips the tie)
    emit_runner_up: bool = False  # emit the runner-up there though its own logprobs rank it 2nd
    wrong_at: int | None = None  # after this many output tokens in a row, emit the worst token
    accept: float | None = None  # per-request accept length to report (sglang spec_verify_ct)
    lifetime: float = 3.1  # what the server claims since start (sglang internal_states)
    drafts: float = 100.0  # vLLM counters, lifetime before the run: 1 + 210 / 100 = 3.1
    accepted: float = 210.0
    accepted_per_step: float = 0.0  # what each vLLM verify step of this run accepts
    # sglang's Prometheus counters (generated tokens, verify calls), lifetime before the run
    # at 3.1; each /generate adds its own, at counter_accept when set (a disagreement with
    # meta_info), else at the meta_info figure
    sgl_tokens: float = 310.0
    sgl_verify: float = 100.0
    counter_accept: float | None = None

    def logprobs(self, ctx: list[int]) -> dict[int, float]:
        rng = random.Random(zlib.crc32(json.dumps(ctx[-4:]).encode()))
        logits = [rng.uniform(0.0, 2.0) for _ in range(V)]
        order = sorted(range(V), key=lambda t: -logits[t])
        logits[order[0]] += 2.0  # a clear winner unless a tie is planted
        if self.plant_tie and ctx[-1] >= V:
            logits[order[1]] = logits[order[0]] - TIE_GAP + self.bias
        z = math.log(sum(math.exp(x) for x in logits))
        return {t: x - z for t, x in enumerate(logits)}

    def run(self, ids: list[int], max_new: int) -> tuple[list[int], list[dict[int, float]]]:
        ctx, out, tops = list(ids), [], []
        for _ in range(max_new):
            lps = self.logprobs(ctx)
            ranked = sorted(lps, key=lambda t: -lps[t])
            tok = ranked[0]
            if self.emit_runner_up and ctx[-1] >= V:
                tok = ranked[1]
            run_len = next((i for i, t in enumerate(reversed(ctx)) if t >= V), len(ctx))
            if self.wrong_at is not None and run_len == self.wrong_at:
                tok = ranked[-1]
            out.append(tok)
            tops.append(lps)
            ctx.append(tok)
        return out, tops


def _generate(toy: Toy, body: dict) -> dict:
    out, tops = toy.run(body["input_ids"], body["sampling_params"]["max_new_tokens"])
    k = body.get("top_logprobs_num") or 0
    meta: dict = {
        "prompt_tokens": len(body["input_ids"]), "completion_tokens": len(out),
        "finish_reason": {"type": "length", "length": len(out)},
        "output_token_logprobs": [[lp[t], t, None] for t, lp in zip(out, tops)],
        "output_top_logprobs": [[[lp[t], t, None] for t in sorted(lp, key=lambda t: -lp[t])[:k]]
                                for lp in tops]}
    if toy.accept is not None:
        meta["spec_verify_ct"] = max(1, round(len(out) / toy.accept))
        toy.sgl_tokens += len(out)
        toy.sgl_verify += (len(out) / toy.counter_accept if toy.counter_accept
                           else meta["spec_verify_ct"])
    return {"text": "", "output_ids": out, "meta_info": meta}


def _completions(toy: Toy, body: dict) -> dict:
    out, tops = toy.run(body["prompt"], body["max_tokens"])
    k = body.get("logprobs") or 0
    toy.drafts += len(out)  # one verify step per token of this run
    toy.accepted += toy.accepted_per_step * len(out)
    return {"choices": [{"text": "", "finish_reason": "length", "token_ids": out, "logprobs": {
        "tokens": [f"token_id:{t}" for t in out],
        "token_logprobs": [lp[t] for t, lp in zip(out, tops)],
        "top_logprobs": [{f"token_id:{t}": lp[t] for t in sorted(lp, key=lambda t: -lp[t])[:k]}
                         for lp in tops]}}],
        "usage": {"prompt_tokens": len(body["prompt"]), "completion_tokens": len(out)}}


def _metrics(toy: Toy) -> str:
    lines = []
    for name, value in (("spec_decode_num_drafts", toy.drafts),
                        ("spec_decode_num_accepted_tokens", toy.accepted)):
        lines += [f"# HELP vllm:{name}_total x", f"# TYPE vllm:{name}_total counter",
                  f'vllm:{name}_total{{engine="0",model_name="m"}} {value}']
    for name, value in (("generation_tokens", toy.sgl_tokens),
                        ("spec_verify_calls", toy.sgl_verify)):
        lines += [f"# HELP sglang:{name}_total x", f"# TYPE sglang:{name}_total counter",
                  f'sglang:{name}_total{{model_name="m"}} {value}']
    return "\n".join(lines) + "\n"


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet request handler whose ``reply`` sends one JSON (or plain-text) answer."""

    def log_message(self, *args: object) -> None:
        pass

    def reply(self, payload: object, status: int = 200, text: bool = False) -> None:
        data = (payload if text else json.dumps(payload)).encode()  # type: ignore[union-attr]
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if text else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def serve(toy: Toy) -> Iterator[str]:
    """The toy on 127.0.0.1 (both engines' paths at once); yields its base URL."""

    class Handler(JsonHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path == "/metrics":
                self.reply(_metrics(toy), text=True)
            elif self.path == "/server_info":
                self.reply({"internal_states": [{"avg_spec_accept_length": toy.lifetime}]})
            else:
                self.send_error(404)

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            route = {"/generate": _generate, "/v1/completions": _completions}.get(self.path)
            if route is None:
                self.send_error(404)
                return
            self.reply(route(toy, body))

    with serving(Handler) as url:
        yield url


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` on 127.0.0.1 in a thread for the block; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
