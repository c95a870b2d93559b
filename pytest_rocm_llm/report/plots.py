"""PNG plots for the report: latency histograms and throughput against offered rate.

matplotlib is imported only here, and only when a report asks for a plot (Agg backend: no
display on a CI machine).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_rocm_llm.performance.records import RequestRecord


def _figure() -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    return plt, (fig, ax)


def _png(plt: Any, fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def latency_histogram(records: Sequence[RequestRecord], title: str) -> bytes | None:
    """TTFT and end-to-end latency of the successful requests."""
    ttft = [r.ttft_s for r in records if r.ok and r.ttft_s is not None]
    e2e = [r.e2e_s for r in records if r.ok and r.e2e_s is not None]
    if not ttft and not e2e:
        return None
    plt, (fig, ax) = _figure()
    bins = max(5, min(40, len(e2e) // 2 or 5))
    if ttft:
        ax.hist(ttft, bins=bins, alpha=0.6, label=f"TTFT (n={len(ttft)})")
    if e2e:
        ax.hist(e2e, bins=bins, alpha=0.6, label=f"end-to-end (n={len(e2e)})")
    ax.set_xlabel("seconds")
    ax.set_ylabel("requests")
    ax.set_title(title)
    ax.legend()
    return _png(plt, fig)


def throughput_vs_rate(steps: Sequence[Mapping[str, Any]], title: str) -> bytes | None:
    """A rate sweep: output tok/s and TTFT max at each offered rate."""
    pts = [(s["rate"], s.get("output_tok_s"), s.get("ttft_max_s")) for s in steps]
    pts = [p for p in pts if p[1] is not None]
    if not pts:
        return None
    plt, (fig, ax) = _figure()
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label="output tok/s")
    ax.set_xlabel("offered rate (req/s)")
    ax.set_ylabel("output tok/s")
    ax2 = ax.twinx()
    ax2.plot([p[0] for p in pts], [p[2] or 0 for p in pts], marker="s", color="tab:red",
             label="TTFT max (s)")
    ax2.set_ylabel("TTFT max (s)")
    ax.set_title(title)
    return _png(plt, fig)
