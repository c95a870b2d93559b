"""PNG plots for the report: latency histograms and throughput against offered rate.

matplotlib is imported only here, and only when a report asks for a plot (Agg backend: no
display on a CI machine).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_rocm_llm.client.records import RequestRecord


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


def sweep_series(steps: Sequence[Mapping[str, Any]]) -> dict[str, list[float | None]]:
    """Per step: its rate, whole-run and steady-state output tok/s, what it offered (rate x
    realized mean output tokens: a step that only kept up shows this and no more) and TTFT
    max."""
    def offered(s: Mapping[str, Any]) -> float | None:
        mean = s.get("mean_output_tokens")
        return None if mean is None else s["rate"] * mean

    return {"rate": [s["rate"] for s in steps],
            "output tok/s (whole run)": [s.get("output_tok_s") for s in steps],
            "steady state output tok/s": [s.get("steady_output_tok_s") for s in steps],
            "offered: rate x mean output tokens": [offered(s) for s in steps],
            "TTFT max (s)": [s.get("ttft_max_s") for s in steps]}


def throughput_vs_rate(steps: Sequence[Mapping[str, Any]], title: str) -> bytes | None:
    """A rate sweep: output tok/s (whole run, steady state, offered) and TTFT max at each
    offered rate."""
    series = sweep_series(steps)
    rates = series.pop("rate")
    ttft = series.pop("TTFT max (s)")
    if not any(v is not None for v in series["output tok/s (whole run)"]):
        return None
    plt, (fig, ax) = _figure()
    for (label, values), style in zip(series.items(), ("o-", "^-", "k:"), strict=True):
        pts = [(r, v) for r, v in zip(rates, values, strict=True) if v is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    ax.set_xlabel("offered rate (req/s)")
    ax.set_ylabel("output tok/s")
    ax.legend(loc="upper left", fontsize="small")
    ax2 = ax.twinx()
    ax2.plot(rates, [t or 0 for t in ttft], marker="s", color="tab:red", label="TTFT max (s)")
    ax2.set_ylabel("TTFT max (s)")
    ax.set_title(title)
    return _png(plt, fig)
