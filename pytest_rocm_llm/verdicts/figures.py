"""What a throughput figure is made of, shown beside its verdict (issue 13 item 7): the
realized mean output tokens per request, the window it was measured over, and the arithmetic
rate x mean output tokens, so a capacity short of its floor says by how much and why.
No pytest in here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_rocm_llm.performance.metrics import STEADY_WINDOW

if TYPE_CHECKING:
    from pytest_rocm_llm.config.checks import Check
    from pytest_rocm_llm.performance.workloads import WorkloadResult


def _f(v: float | None, fmt: str = ".4g") -> str:
    return "-" if v is None else format(v, fmt)


def _capacity_notes(check: Check, result: WorkloadResult) -> list[str]:
    m, steps = result.metrics, result.steps
    cap, rate, mean = (m.get(k) for k in ("capacity_output_tok_s", "capacity_rate",
                                          "capacity_mean_output_tokens"))
    slo = f"TTFT max <= {result.workload.ttft_slo_s or 0:g} s, every request succeeded"
    if cap is None:
        return [f"step {s['rate']:g} req/s held the SLO but had no steady state to measure "
                f"(its arrivals spanned less than one request lifetime, "
                f"{_f(s.get('e2e_p50_s'), '.3g')} s): raise the workload's requests"
                for s in steps if s["held"] and s.get("steady_output_tok_s") is None]
    if not any(s["held"] for s in steps):
        first = steps[0] if steps else None
        why = "; ".join(first["slo_breaches"]) if first else "no step ran"
        return [f"no step held the SLO ({slo}): the first, "
                f"{first['rate'] if first else 0:g} req/s, broke it: {why}"]
    assert rate is not None
    notes = [f"capacity {cap:.4g} tok/s at the {rate:g} req/s step, the best that held the "
             f"SLO ({slo}); that step offered {rate:g} req/s x {_f(mean)} mean output tokens "
             f"per completed request = {_f(rate * mean if mean else None)} tok/s",
             f"window: {STEADY_WINDOW} ({_f(m.get('capacity_window_s'), '.0f')} s)"]
    if check.min:
        need = f"{check.min / mean:.3g} req/s" if mean else "-"
        notes.append(f"{cap / check.min:.3f} of the floor {check.min:g} tok/s, which at "
                     f"{_f(mean)} tokens per request needs {need} held")
    later = [s for s in steps if not s["held"]]
    if later:
        s = later[0]
        notes.append(f"the next step, {s['rate']:g} req/s: "
                     + "; ".join(s["problems"] or s["slo_breaches"]))
    return notes


def figure_notes(check: Check, result: WorkloadResult) -> tuple[str, ...]:
    """What a throughput figure is made of, to show beside its verdict: the realized mean
    output tokens per request, the window it was measured over, and rate x mean output
    tokens (what the offered load amounts to). Empty for other metrics."""
    if check.workload is None or check.relative_to is not None:
        return ()
    m, w = result.metrics, result.workload
    if check.metric == "capacity_output_tok_s":
        return tuple(_capacity_notes(check, result))
    if check.metric not in ("output_tok_s", "steady_output_tok_s"):
        return ()
    mean = m.get("mean_output_tokens")
    notes = [f"whole run: {_f(m.get('output_tok_s'))} tok/s = output tokens / wall time "
             f"({_f(m.get('duration_s'), '.0f')} s, ramp-up and drain included)",
             f"steady state: {_f(m.get('steady_output_tok_s'))} tok/s ({STEADY_WINDOW}, "
             f"{_f(m.get('steady_window_s'), '.0f')} s)",
             f"{_f(mean)} mean output tokens per completed request"]
    if w.arrivals == "at_a_rate" and w.request_rate and mean:
        notes.append(f"offered: {w.request_rate:g} req/s x {mean:.4g} tokens = "
                     f"{w.request_rate * mean:.4g} tok/s (a node that keeps up shows this "
                     "in steady state and no more: it measures keeping up, not capacity)")
    return tuple(notes)
