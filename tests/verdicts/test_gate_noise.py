"""The gate's false-fail rate and power, simulated through the production judge: a workload
result (trials, records) judged once to record its baseline entry, and again as the next
build. An unchanged build fails at about alpha when the baseline carries a between-run
spread, and is reported (never failed) when it does not; a regression of the stated
minimum detectable size fails at about the stated power."""

from __future__ import annotations

import random
import tomllib
from pathlib import Path

import pytest

from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.performance.metrics import serving_metrics
from pytest_rocm_llm.performance.workloads import WorkloadResult
from pytest_rocm_llm.serving.server import LLMServer
from pytest_rocm_llm.verdicts.baselines import BaselineCache, BaselineEntry, BaselineFile
from pytest_rocm_llm.verdicts.judge import judge_workload
from tests.conftest import SMOKE_MODEL
from tests.performance.test_metrics import rec

SUITE = f"""
[suite]
name = "noise"
{SMOKE_MODEL}
[profiles.default]
[workloads.decode]
kind = "single_stream"
input_tokens = 100
output_tokens = 11
requests = 4
trials = 3
[checks.speed]
workload = "decode"
metric = "output_speed_tok_s"
min = 1.0
source = "simulation"
"""
SUITE_ONE_RUN = SUITE.replace("trials = 3\n", "")
PROV = {"kind": "measured", "date": "2026-12-01"}
SERVER = LLMServer("noise", "default", "http://127.0.0.1:1", "sglang", "m", "/m", (), {},
                   "0.5.23")


def suite(text: str):
    return parse_suite(Path("suites/noise/suite.toml"), tomllib.loads(text))


def run(s, speeds: list[list[float]]) -> WorkloadResult:
    """A decode run: one list of per-request output speeds per trial (10 tokens after the
    first, so e2e - ttft = 10 / speed)."""
    w = s.workloads["decode"]
    per_trial = []
    records = []
    for trial in speeds:
        recs = [rec(i, 0.2, 0.2 + 10 / v, 11, send=float(i)) for i, v in enumerate(trial)]
        per_trial.append(serving_metrics(recs, float(len(recs))))
        records += recs
    if len(per_trial) == 1:
        return WorkloadResult(w, records, per_trial[0])
    metrics = {k: (sum(m[k] for m in per_trial) / len(per_trial)
                   if all(m.get(k) is not None for m in per_trial) else None)
               for k in per_trial[0]}
    return WorkloadResult(w, records, metrics, [], per_trial)


def judged(s, result: WorkloadResult, tmp_path: Path, mode: str = "check"):
    return judge_workload(s.checks["speed"], result, s, TARGETS["cpu"], SERVER,
                          BaselineCache(tmp_path), mode, PROV, "id", {})


def speeds(rng: random.Random, level: float, trials: int, between: float, within: float,
           requests: int = 4) -> list[list[float]]:
    """Each trial's level moves by ``between`` (relative SD) around ``level``; its requests
    by ``within`` around the trial's level."""
    out = []
    for _ in range(trials):
        mu = level * (1 + rng.gauss(0, between))
        out.append([mu * (1 + rng.gauss(0, within)) for _ in range(requests)])
    return out


def fail_rate(text: str, tmp_path: Path, pairs: int, regression: float = 0.0,
              between: float = 0.05, within: float = 0.01, seed: int = 13):
    """Share of (baseline run, new run) pairs whose gate fails, and the last verdict."""
    s = suite(text)
    trials = s.workloads["decode"].trials
    rng = random.Random(seed)
    fails, last = 0, None
    for _ in range(pairs):
        base_run = run(s, speeds(rng, 100.0, trials, between, within))
        entry = judged(s, base_run, tmp_path, "regen").decision.write
        assert entry is not None
        new = run(s, speeds(rng, 100.0 * (1 - regression), trials, between, within))
        d = decide_against(s, new, entry, tmp_path)
        fails += d.failure is not None
        last = d.verdict
    return fails / pairs, last


def decide_against(s, new: WorkloadResult, entry: dict, tmp_path: Path):
    """The check-mode decision of ``new`` by the production judge, against ``entry`` as
    read back from the suite's baseline file."""
    cache = BaselineCache(tmp_path)
    path, _ = cache.get("cpu", s.name)
    cache._files[path] = BaselineFile(path, s.name, "cpu",
                                      {"speed": BaselineEntry("speed", entry)})
    return judge_workload(s.checks["speed"], new, s, TARGETS["cpu"], SERVER, cache, "check",
                          PROV, "id", {}).decision


def test_an_unchanged_build_fails_at_about_alpha_with_a_between_run_spread(tmp_path: Path):
    """3 + 3 trials, 5% between-run SD: the false-fail rate is alpha = 1% (a z on the same
    noise would give ~4%, a gate on one run's request spread ~50%)."""
    rate, v = fail_rate(SUITE, tmp_path, 2000)
    assert 0.004 <= rate <= 0.018, rate
    assert v.gated and v.alpha == 0.01 and v.spread_kind == "between_runs" and v.runs == 3
    assert "alpha 0.01" in v.gate and v.mde_pct is not None


def test_a_regression_of_the_stated_detectable_size_fails_at_about_the_stated_power(
        tmp_path: Path):
    """The minimum detectable regression for the true noise (2% SD, 3 + 3 trials, alpha
    0.01, 90% power) is caught ~90% of the time; one run's row states its own estimate."""
    from pytest_rocm_llm.verdicts.power import minimum_detectable

    mde = minimum_detectable(0.02 * (2 / 3) ** 0.5, 0.01, 0.9, df=4)
    assert mde == pytest.approx(0.0921, abs=1e-3)  # exact noncentral t (t + t said 0.0862)
    rate, v = fail_rate(SUITE, tmp_path, 800, regression=mde, between=0.02, within=0.0,
                        seed=5)
    assert 0.85 <= rate <= 0.95, rate
    assert v.mde_pct is not None and 2 < v.mde_pct < 30


def test_without_a_between_run_spread_the_metric_is_reported_not_failed(tmp_path: Path):
    """One run per build: the runs move 5% while each run's median is precise to ~0.5%.
    Gating on that within-run error failed about half of unchanged builds; now none fails,
    and the row says why and claims no alpha."""
    rate, v = fail_rate(SUITE_ONE_RUN, tmp_path, 200)
    assert rate == 0.0
    assert v.gated is False and v.alpha is None and v.mde_pct is None
    assert v.gate.startswith("reported, not gated")
    assert any("reported, not gated" in note for note in v.notes)


def test_a_published_figure_without_spread_is_reported(tmp_path: Path):
    """glm52's stored single-stream speed is a published figure (no spread): a build 1% under
    a median 0.8% under it is a report row, not a regression with a false alpha."""
    s = suite(SUITE_ONE_RUN)
    entry = {"metric": "output_speed_tok_s", "unit": "tok/s", "direction": "higher",
             "value": 213.0, "n": 1, "spread": None, "spread_kind": "stderr",
             "gate": {"kind": "floor", "alpha": 0.01, "tolerance": 0.0},
             "provenance": {"kind": "published", "date": "2026-07"}}
    new = run(s, [[210.0, 211.0, 212.0, 211.5]])
    d = decide_against(s, new, entry, tmp_path)
    assert d.failure is None and d.verdict.status == "pass"
    assert d.verdict.gated is False and d.verdict.alpha is None
    assert d.verdict.baseline == 213.0 and d.verdict.delta_pct == pytest.approx(-0.82, abs=0.01)


def test_the_recorded_entry_stores_the_between_run_spread_and_validates(tmp_path: Path):
    from pytest_rocm_llm.verdicts.baselines import apply_updates, load

    s = suite(SUITE)
    result = run(s, [[10.0] * 4, [11.0] * 4, [12.0] * 4])
    entry = judged(s, result, tmp_path, "regen").decision.write
    assert entry["spread_kind"] == "between_runs" and entry["runs"] == 3
    assert entry["spread"] == pytest.approx(1.0, rel=1e-3)  # SD of 10, 11, 12 tok/s
    assert entry["value"] == pytest.approx(11.0, rel=1e-3)
    path = tmp_path / "cpu" / "noise.json"
    apply_updates(path, "noise", "cpu", {"speed": entry})
    m = load(path).entries["speed"].measurement
    assert (m.spread_kind, m.runs) == ("between_runs", 3)
