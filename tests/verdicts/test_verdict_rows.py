"""The verdict row ``decide`` returns, field by field, for each way a check ends: what the
summary table, the results file and the report show must say what happened."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_rocm_llm.config.checks import Gate
from pytest_rocm_llm.verdicts.baselines import BaselineEntry
from pytest_rocm_llm.verdicts.gate import Measurement, between_runs
from pytest_rocm_llm.verdicts.verdict import (
    CheckSpec,
    Verdict,
    baseline_entry,
    decide,
    flags_digest,
    floor_miss,
    unjudged_failure,
)

TPUT = CheckSpec("tput", "output_tok_s", "tok/s", 100.0, None, "published, 2026-07",
                 Gate("floor"))
TTFT = CheckSpec("ttft", "ttft_p99_s", "s", None, 2.0, "SLO", Gate("ceiling"))
BASE = Verdict(suite="glm52", target="mi355x", profile="throughput", check="tput",
               feature="performance", metric="output_tok_s", unit="tok/s", status="pass")
PROV = {"kind": "measured", "kernel_paths": {"attention": "aiter"}}
REFS = [{"hardware": "B200", "check": "tput", "value": 200.0, "unit": "tok/s",
         "conditions": "TP8, fp8", "source": "lmsys blog"},
        {"hardware": "H200", "check": "tput", "value": 0, "source": "none measured"},
        {"hardware": "H100", "check": "other", "value": 50.0, "source": "x"}]


def stored(value: float, spread: float | None = 2.0, runs: int = 3,
           provenance: dict | None = None, direction: str = "higher") -> BaselineEntry:
    return BaselineEntry("tput", {
        "metric": "output_tok_s", "unit": "tok/s", "direction": direction, "value": value,
        "n": 8, "spread": spread, "spread_kind": "between_runs", "runs": runs,
        "gate": {"kind": "floor", "alpha": 0.01},
        "provenance": provenance or {"kind": "published", "kernel_paths": {"attention": "ck"}}})


def test_a_passing_gated_check_shows_measurement_baseline_gate_and_references() -> None:
    d = decide(TPUT, between_runs([150.0, 152.0, 154.0], n=8), BASE, stored(150.0), "check",
               PROV, "b.json", REFS)
    v = d.verdict
    assert (d.failure, d.cause, d.write, v.status, v.message) == (None, None, None, "pass", "")
    assert (v.measured, v.n, v.spread, v.baseline, v.baseline_kind) == (152.0, 8, 2.0, 150.0,
                                                                       "published")
    assert (v.floor, v.floor_source) == (">= 100 tok/s", "published, 2026-07")
    assert v.gate.startswith(">= ") and " tok/s (margin " in v.gate
    assert v.delta_pct == pytest.approx(2 / 150 * 100)
    assert v.references == ("B200: 200 tok/s, TP8, fp8 -> ratio 0.76 (lmsys blog)",)
    assert v.notes == ("kernel path changed since the baseline: attention ck -> aiter",)
    assert (v.suite, v.target, v.profile, v.check) == ("glm52", "mi355x", "throughput", "tput")


def test_a_reference_without_conditions_or_unit() -> None:
    rows = [{"hardware": "B200", "check": "tput", "value": 200.0, "source": "blog"}]
    d = decide(TPUT, Measurement(150.0), BASE, None, "regen", PROV, "b.json", rows)
    assert d.verdict.references == ("B200: 200 -> ratio 0.75 (blog)",)


def test_a_floor_miss_fails_on_the_floor_before_any_baseline() -> None:
    d = decide(TPUT, Measurement(90.0, 8), BASE, stored(80.0), "check", PROV, "b.json")
    assert (d.verdict.status, d.cause) == ("fail", "floor")
    assert d.failure == d.verdict.message == (
        "tput: output_tok_s = 90 tok/s, floor >= 100 tok/s (published, 2026-07): short by 10.0%")


def test_a_ceiling_check_states_its_ceiling_and_overshoot() -> None:
    d = decide(TTFT, Measurement(2.5), BASE, None, "check", PROV, "b.json")
    assert d.verdict.floor == "<= 2 s" and d.cause == "floor"
    assert d.failure == "ttft: ttft_p99_s = 2.5 s, ceiling <= 2 s (SLO): over by 25.0%"
    band = CheckSpec("x", "m", "", 1.0, 3.0, "src", None)
    assert decide(band, Measurement(2.0), BASE, None, "check", PROV, "b.json").verdict.floor \
        == ">= 1 and <= 3"


def test_a_check_without_a_gate_passes_on_its_floor_alone() -> None:
    spec = CheckSpec("tput", "output_tok_s", "tok/s", 100.0, None, "src", None)
    d = decide(spec, Measurement(120.0), BASE, stored(500.0), "check", PROV, "b.json")
    assert (d.verdict.status, d.failure, d.write, d.verdict.gate) == ("pass", None, None, "")


def test_a_first_run_records_its_baseline_and_asks_for_review() -> None:
    m = between_runs([150.0, 152.0, 154.0], n=8)
    d = decide(TPUT, m, BASE, None, "check", PROV, "glm52.json")
    assert (d.verdict.status, d.cause) == ("new", "baseline")
    assert d.failure == ("tput: no baseline yet; recorded 152 tok/s in glm52.json. Review it, "
                         "commit it, and run again")
    w = d.write
    assert w is not None
    assert {k: w[k] for k in ("metric", "unit", "direction", "value", "n", "spread",
                              "spread_kind", "profile", "provenance")} == {
        "metric": "output_tok_s", "unit": "tok/s", "direction": "higher", "value": 152.0,
        "n": 8, "spread": 2.0, "spread_kind": "between_runs", "profile": "throughput",
        "provenance": PROV}
    assert w["gate"] == {"kind": "floor", "alpha": 0.01, "tolerance": 0.0}
    regen = decide(TPUT, m, BASE, None, "regen", PROV, "glm52.json")
    assert (regen.verdict.status, regen.failure, regen.write) == ("new", None, w)


def test_a_stored_entry_counts_at_least_one_item() -> None:
    d = decide(TPUT, Measurement(150.0, 0), BASE, None, "regen", PROV, "b.json")
    assert d.write is not None and d.write["n"] == 1


def test_update_and_regen_rewrite_the_baseline() -> None:
    m = Measurement(160.0, 8)
    up = decide(TPUT, m, BASE, stored(150.0), "update", PROV, "b.json")
    assert (up.verdict.status, up.cause) == ("updated", "baseline")
    assert up.failure == (
        "tput: baseline updated 150 -> 160 tok/s in b.json (--llm-update-baselines fails the "
        "updated checks; review the diff and run without it)")
    assert up.write is not None and up.write["value"] == 160.0
    regen = decide(TPUT, m, BASE, stored(150.0), "regen", PROV, "b.json")
    assert (regen.verdict.status, regen.failure, regen.cause) == ("updated", None, None)


def test_a_gate_failure_names_the_baseline_kind_and_the_delta() -> None:
    d = decide(TPUT, between_runs([120.0, 121.0, 122.0], n=8), BASE,
               stored(150.0, provenance={"kind": "measured"}), "check", PROV, "b.json")
    assert (d.verdict.status, d.cause) == ("fail", "gate")
    assert d.failure is not None and d.failure.startswith(
        "tput: output_tok_s = 121 tok/s vs measured baseline 150 tok/s (-19.3%): gate >= ")
    assert d.failure.endswith(" not met") and d.verdict.message == d.failure


def test_verdicts_round_trip_through_json_and_old_rows_load() -> None:
    v = decide(TPUT, Measurement(150.0), BASE, stored(140.0), "check", PROV, "b.json",
               REFS).verdict
    assert Verdict.from_json(v.to_json()) == v
    old = {k: x for k, x in BASE.to_json().items() if k not in ("references", "notes")}
    loaded = Verdict.from_json(old)
    assert (loaded.references, loaded.notes) == ((), ())


def test_flags_digest_is_stable_and_order_sensitive() -> None:
    assert flags_digest(["--tp", "8"]) == "sha256:6a13c9b10a0af4f0"
    assert flags_digest(("--tp", "8")) == flags_digest(["--tp", "8"])
    assert flags_digest(["8", "--tp"]) != flags_digest(["--tp", "8"])


def unjudged(message: str) -> Verdict:
    return Verdict(**{**BASE.to_json(), "status": "not-judged", "message": message,
                      "references": (), "check": "gsm8k"})


def test_an_unjudged_check_fails_a_gpu_run_unless_allowed() -> None:
    gpu = SimpleNamespace(name="mi355x", is_gpu=True)
    rows = [unjudged("no eval data at /data/gsm8k.jsonl\nsecond line"), BASE]
    msg = unjudged_failure(gpu, rows, allow=False)  # type: ignore[arg-type]
    assert msg is not None and msg.startswith(
        "1 declared check(s) not judged on target mi355x, so this run does not pass the "
        "gate:\n  glm52/gsm8k: no eval data at /data/gsm8k.jsonl\nFix what stopped them")
    two = unjudged_failure(gpu, [unjudged("no model"), unjudged("no tau2")], False)  # type: ignore[arg-type]
    assert two == (
        "2 declared check(s) not judged on target mi355x, so this run does not pass the gate:"
        "\n  glm52/gsm8k: no model\n  glm52/gsm8k: no tau2\nFix what stopped them, or pass "
        "--llm-allow-unjudged (ini llm_allow_unjudged) to accept a partial run")
    assert "glm52/gsm8k: ?" in (unjudged_failure(gpu, [unjudged("")], False) or "")  # type: ignore[arg-type]
    assert unjudged_failure(gpu, rows, allow=True) is None  # type: ignore[arg-type]
    assert unjudged_failure(gpu, [BASE], allow=False) is None  # type: ignore[arg-type]
    cpu = SimpleNamespace(name="cpu", is_gpu=False)
    assert unjudged_failure(cpu, rows, allow=False) is None  # type: ignore[arg-type]


def test_floor_and_ceiling_misses_at_their_edges() -> None:
    floor = CheckSpec("x", "m", "", 1.0, None, "src", None)
    assert floor_miss(floor, 1.0) is None
    assert floor_miss(floor, 0.5) == "x: m = 0.5, floor >= 1 (src): short by 50.0%"
    assert floor_miss(CheckSpec("x", "m", "", 0.0, None, "src", None), -1.0) == (
        "x: m = -1, floor >= 0 (src): short by inf%")
    ceiling = CheckSpec("x", "m", "", None, 2.0, "src", None)
    assert floor_miss(ceiling, 2.0) is None
    assert floor_miss(CheckSpec("x", "m", "", None, 0.0, "src", None), 1.0) == (
        "x: m = 1, ceiling <= 0 (src): over by inf%")


def test_a_baseline_entry_without_a_suite_gate_gets_one_for_its_direction() -> None:
    up = baseline_entry(CheckSpec("x", "m", "", 1.0, None, "s", None), Measurement(2.0), "p", {})
    down = baseline_entry(CheckSpec("x", "m", "", None, 1.0, "s", None), Measurement(0.5), "p",
                          {})
    assert up["gate"] == {"kind": "floor", "alpha": 0.01, "tolerance": 0.0}
    assert down["gate"]["kind"] == "ceiling" and down["direction"] == "lower"
    assert (up["runs"], up["n"]) == (1, 1)


def test_a_gate_failure_without_a_provenance_kind_says_measured_and_a_zero_baseline_0() -> None:
    spec = CheckSpec("lat", "ttft_p99_s", "s", None, None, "src", Gate("ceiling"))
    d = decide(spec, between_runs([5.0, 5.1, 5.2], n=8), BASE,
               stored(0.0, provenance={"date": "2026-07-01"}), "check", PROV, "b.json")
    assert d.failure is not None and d.failure.startswith(
        "lat: ttft_p99_s = 5.1 s vs measured baseline 0 s (+0.0%): gate <= ")
    assert "detects" not in d.verdict.gate and d.verdict.gate.endswith(" runs at 90% power)")
    published = decide(spec, between_runs([5.0, 5.1, 5.2], n=8), BASE, stored(1.0, 0.1), "check",
                       PROV, "b.json")
    assert published.failure is not None and " vs published baseline 1 s " in published.failure
