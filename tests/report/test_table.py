"""The end-of-run verdict table says how far each baseline comparison can be trusted: a row
without run-to-run noise is marked reported, a gated row shows the smallest regression it
detects, and a value averaged over trials shows its between-run SD and trial count."""

from __future__ import annotations

from pytest_rocm_llm.report.table import row
from pytest_rocm_llm.verdicts.verdict import Verdict


def verdict(**kw) -> Verdict:
    base = dict(suite="s", target="cpu", profile="p", check="decode_speed",
                feature="performance", metric="output_speed_tok_s", unit="tok/s", status="pass",
                measured=11.6, baseline=11.5, baseline_kind="measured", delta_pct=0.9)
    return Verdict(**{**base, **kw})


def test_a_row_without_run_to_run_noise_is_marked_reported() -> None:
    r = row(verdict(gated=False))
    assert r[3] == "11.5 tok/s (reported)"


def test_a_gated_row_shows_the_smallest_regression_it_detects() -> None:
    r = row(verdict(gated=True, alpha=0.01, mde_pct=69.4))
    assert r[3] == "11.5 tok/s (detects 69%)"


def test_trials_show_their_between_run_spread_and_count() -> None:
    r = row(verdict(spread=1.42, spread_kind="between_runs", runs=5, gated=True))
    assert r[1] == "11.6 tok/s ±1.4 SD/5 trials"
    # a within-run spread keeps the plain form
    assert row(verdict(spread=0.3, spread_kind="stderr"))[1] == "11.6 tok/s ±0.3"


def test_a_pending_row_says_none_until_measured() -> None:
    r = row(verdict(baseline=None, baseline_kind=None, delta_pct=None, gated=False,
                    gate="none until measured"))
    assert r[3] == "none until measured (reported)"
