"""A local stream source that speaks sglang's ``/generate`` SSE format as fast as it can.

Benchmark use only: it measures how many streamed tokens per second the client can consume
on one core, which a real server on this machine cannot produce fast enough to find out.
Run: ``python benchmarks/stream_source.py PORT OUTPUT_TOKENS``, or ``with started(osl) as
port:`` from a benchmark (pinned to the second core; the clients measured take the first).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, osl: int) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            raw = await reader.readexactly(length)
            if not head.startswith(b"POST /generate "):
                # Clients probe other endpoints (model info, flush): answer with an empty object.
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: 2\r\n\r\n{}")
                await writer.drain()
                continue
            body = json.loads(raw)
            prompt = len(body.get("input_ids") or [])
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n")
            text = ""
            for n in range(1, osl + 1):
                text += " tok"  # cumulative text, as sglang streams it
                event = {"text": text, "meta_info": {
                    "prompt_tokens": prompt, "completion_tokens": n, "cached_tokens": 0,
                    "finish_reason": {"type": "length"} if n == osl else None}}
                payload = b"data: " + json.dumps(event).encode() + b"\n\n"
                writer.write(b"%x\r\n%s\r\n" % (len(payload), payload))
                if n % 16 == 0:
                    await writer.drain()
            done = b"data: [DONE]\n\n"
            writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int, osl: int) -> None:
    server = await asyncio.start_server(lambda r, w: handle(r, w, osl), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


@contextmanager
def started(osl: int) -> Iterator[int]:
    """A stream source in its own process for the block, on a port claimed the way servers'
    are (serving/ports.py: outside the ephemeral range); yields the port."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from pytest_rocm_llm.serving.ports import claim_port, release_port

    port = claim_port()
    cpu = 1 % (os.cpu_count() or 1)
    source = subprocess.Popen([sys.executable, __file__, str(port), str(osl)],
                              preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    try:
        time.sleep(1.0)  # until it listens
        yield port
    finally:
        source.kill()
        source.wait()
        release_port(port)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
