"""The rate-sweep plot's series: whole-run and steady-state output tok/s beside what each step
offered (rate x realized mean output tokens), so a step that merely kept up is told apart from
spare capacity."""

from __future__ import annotations

import pytest

from pytest_rocm_llm.report.plots import sweep_series, throughput_vs_rate


def step(rate: float, steady: float | None, mean: float | None = 100.0) -> dict:
    return {"rate": rate, "output_tok_s": steady and steady * 0.8, "steady_output_tok_s": steady,
            "mean_output_tokens": mean, "ttft_max_s": 1.0}


def test_each_series_is_per_step_with_the_offered_load() -> None:
    s = sweep_series([step(2.0, 199.0), step(2.4, 238.0), step(2.8, None, None)])
    assert s["rate"] == [2.0, 2.4, 2.8]
    assert s["steady state output tok/s"] == [199.0, 238.0, None]
    assert s["offered: rate x mean output tokens"] == pytest.approx([200.0, 240.0, None])
    assert s["output tok/s (whole run)"] == pytest.approx([159.2, 190.4, None])


def test_the_plot_renders_a_png() -> None:
    pytest.importorskip("matplotlib")
    png = throughput_vs_rate([step(2.0, 199.0), step(2.4, 238.0)], "sweep")
    assert png is not None and png.startswith(b"\x89PNG")
