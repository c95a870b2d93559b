"""One record per request, as measured by the client, and their CSV form.

Times are seconds from a monotonic clock (``time.perf_counter``), taken as chunks arrive;
``send_s`` is relative to the workload's start.
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass, field, fields


@dataclass
class RequestRecord:
    index: int
    send_s: float
    expected_output_tokens: int
    expected_prompt_tokens: int
    ok: bool = False
    error: str | None = None
    status: int | None = None
    ttft_s: float | None = None
    e2e_s: float | None = None
    # (seconds since the previous token-bearing chunk, tokens in this chunk)
    chunk_gaps: list[tuple[float, int]] = field(default_factory=list)
    prompt_tokens: int = 0
    cached_tokens: int | None = None
    completion_tokens: int = 0
    spec_verify_ct: int | None = None
    finish_reason: str | None = None
    chunks: int = 0
    content_chunks: int = 0  # OpenAI APIs: chunks that carried text
    text: str = ""

    @property
    def tpot_s(self) -> float | None:
        """Time per output token after the first: (e2e - TTFT) / (tokens - 1)."""
        if not self.ok or self.ttft_s is None or self.e2e_s is None:
            return None
        if self.completion_tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (self.completion_tokens - 1)

    @property
    def output_speed_tok_s(self) -> float | None:
        """Artificial Analysis output speed: (tokens - 1) / (e2e - TTFT), i.e. decode speed
        excluding the time to first token."""
        tpot = self.tpot_s
        return None if tpot is None or tpot <= 0 else 1.0 / tpot

    @property
    def itl_s(self) -> list[float]:
        """Inter-token latencies; a chunk carrying k tokens counts as k gaps of gap/k (as
        sglang's bench_serving does), so speculative bursts are comparable."""
        out: list[float] = []
        for gap, tokens in self.chunk_gaps:
            if tokens > 0:
                out.extend([gap / tokens] * tokens)
        return out

    @property
    def accept_length(self) -> float | None:
        """Tokens per verify step of speculative decoding (completion / spec_verify_ct)."""
        if not self.spec_verify_ct:
            return None
        return self.completion_tokens / self.spec_verify_ct


_CSV_FIELDS = [f.name for f in fields(RequestRecord) if f.name not in ("chunk_gaps", "text")]


def records_to_csv(records: list[RequestRecord]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=[*_CSV_FIELDS, "tpot_s", "output_speed_tok_s"])
    writer.writeheader()
    for r in records:
        row = {k: v for k, v in asdict(r).items() if k in _CSV_FIELDS}
        row["tpot_s"] = r.tpot_s
        row["output_speed_tok_s"] = r.output_speed_tok_s
        writer.writerow(row)
    return buf.getvalue()
