"""The sequential paired gate (verdicts/sequential.py): O'Brien-Fleming-type alpha spending
over looks at whole A-B-B-A blocks, a decided check keeps its verdict, the default budget
follows the target's trial CV."""

from __future__ import annotations

import math

import pytest

from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.verdicts.sequential import (
    PairedCheck,
    SequentialDesign,
    SequentialGate,
    default_budget,
    obf_spent,
)

SPEED = PairedCheck("decode_speed", "tok_s", "tok/s", "higher")


def test_the_looks_spend_exactly_alpha_and_almost_none_early() -> None:
    d = SequentialDesign.of(3, 17)  # whole blocks: 4 and 18
    assert d.looks() == [4, 6, 8, 10, 12, 14, 16, 18]
    spent = [d.alpha_at(n) for n in d.looks()]
    assert math.isclose(sum(spent), 0.02, rel_tol=1e-12)
    assert spent[0] < 1e-4 and spent[-1] > 0.005  # OBF: the last look keeps the most
    assert d.alpha_at(5) == 0.0  # no look between blocks
    assert obf_spent(0.5, 0.05) == pytest.approx(0.00557, abs=1e-5)  # Lan-DeMets' table


def test_a_decided_check_keeps_its_verdict_and_an_undecided_one_goes_on() -> None:
    gate = SequentialGate(SequentialDesign(2, 6), [SPEED, PairedCheck("ttft", "ttft", "ms",
                                                                      "lower")])
    a, b = [100.0, 100.1, 99.9, 100.0], [80.0, 80.1, 79.9, 80.0]  # 20% slower, quiet
    lat_a, lat_b = [10.0, 14.0, 9.0, 13.0], [12.0, 10.0, 15.0, 9.5]  # noisy
    values = {"tok_s": (a, b), "ttft": (lat_a, lat_b)}
    assert not gate.look(4, list("ABBAABBA"), values.get)
    assert gate.decided == {"decode_speed"}
    first = gate.verdicts["decode_speed"]
    assert first is not None and first.status == "regressed" and "look 2 of 3" in first.detail
    values["tok_s"] = ([*a, 100.0, 100.0], [*b, 120.0, 120.0])  # later trials never count
    assert gate.look(6, list("ABBAABBAABBA"), lambda m: (
        ([*lat_a, 11.0, 11.0], [*lat_b, 11.0, 11.0]) if m == "ttft" else values[m]))
    assert gate.verdicts["decode_speed"] is first
    last = gate.verdicts["ttft"]
    assert last is not None and last.status == "inconclusive"
    assert "undecided at the budget" in last.detail and last.trials_needed
    assert "(--llm-pair-budget) would give it those trials" in last.detail


def test_a_metric_missing_from_a_trial_is_decided_as_none() -> None:
    gate = SequentialGate(SequentialDesign(2, 4), [SPEED])
    assert gate.look(2, list("ABBA"), lambda m: None)
    assert gate.verdicts == {"decode_speed": None}


def test_the_default_budget_grows_with_the_targets_trial_cv() -> None:
    assert default_budget(0.02) == 10 and default_budget(0.03) == 20
    assert default_budget(0.01) < default_budget(0.02) < default_budget(0.06) <= 96
    assert all(default_budget(c) % 2 == 0 for c in (0.005, 0.013, 0.027, 0.2))
    assert TARGETS["cpu"].trial_cv == 0.047 and "measured 2026-12-04" in TARGETS[
        "cpu"].trial_cv_source
    # blocks of fresh servers: the servers' own spread on top of the trials', and a growth
    # for the block-unit t interval's fewer degrees of freedom (46 left 9.2% inconclusive)
    assert default_budget(0.02, instance_cv=0.02) > default_budget(0.02)
    assert default_budget(0.03, instance_cv=0.03) == 56
    assert default_budget(0.047, instance_cv=0.03) == 84  # the CPU reference's, under 96
    assert default_budget(0.0, instance_cv=0.0) == default_budget(0.0)
    assert "assumed" in TARGETS["mi355x"].trial_cv_source


def test_designs_come_in_whole_blocks() -> None:
    with pytest.raises(ValueError, match="whole blocks"):
        SequentialDesign(3, 8)
    with pytest.raises(ValueError, match="between"):
        SequentialDesign(8, 4)
    assert SequentialDesign.of(8, 4) == SequentialDesign(8, 8)


def test_a_broken_measurement_gets_a_row_not_a_crash() -> None:
    gate = SequentialGate(SequentialDesign(2, 4), [SPEED])
    assert gate.look(2, list("ABBA"), lambda m: ([1.0, math.nan], [1.0, 1.0]))
    v = gate.verdicts["decode_speed"]
    assert v is not None and v.status == "unpaired" and "finite values" in v.detail


# Two servers of one build, one per build for the whole run: CI read +4.9% [+0.2%, +9.7%]
# for the same build against itself (4 trials per build, quiet trials, a steady offset).
SAME_A, SAME_B = [18.8, 19.3, 19.1, 19.0], [20.3, 19.8, 20.0, 19.2]


def test_blocks_of_fresh_servers_are_the_unit_so_a_servers_offset_is_not_an_effect() -> None:
    # The same +4.9% offset, but two blocks on two pairs of servers that disagree: per pair
    # the trials look tight (a "pass" or "improved" reading), per block the spread shows.
    a, b = SAME_A, [20.3, 19.8, 18.6, 18.4]  # block 1 on servers +5%, block 2 on -3%
    per_pair = SequentialGate(SequentialDesign(4, 4), [SPEED])
    per_block = SequentialGate(SequentialDesign(4, 4, per_block=True), [SPEED])
    for gate in (per_pair, per_block):
        gate.look(4, list("ABBAABBA"), lambda metric: (a, b))
    loose, held = per_pair.verdicts["decode_speed"], per_block.verdicts["decode_speed"]
    assert loose is not None and held is not None
    assert held.status == "inconclusive", held.detail
    assert held.ci_high - held.ci_low > 2 * (loose.ci_high - loose.ci_low)
    assert "in 2 blocks of fresh servers" in held.detail
    assert "per block of fresh servers" in held.method


def test_a_real_slowdown_is_regressed_with_blocks_as_the_unit() -> None:
    gate = SequentialGate(SequentialDesign(4, 6, per_block=True), [SPEED])
    a = SAME_A + [19.2, 18.9]
    slow = [x * f for x, f in zip(a, (0.6, 0.62, 0.58, 0.61, 0.59, 0.6))]
    gate.look(4, list("ABBAABBA"), lambda metric: (a[:4], slow[:4]))
    gate.look(6, list("ABBAABBAABBA"), lambda metric: (a, slow))
    v = gate.verdicts["decode_speed"]
    assert v is not None and v.status == "regressed", v.detail
    assert "3 blocks" in v.detail or "2 blocks" in v.detail


def test_one_block_has_no_interval() -> None:
    gate = SequentialGate(SequentialDesign(2, 2, per_block=True), [SPEED])
    gate.look(2, list("ABBA"), lambda metric: (SAME_A[:2], SAME_B[:2]))
    v = gate.verdicts["decode_speed"]
    assert v is not None and v.status == "inconclusive"
    assert "at least 4 trials per build (two blocks of fresh servers)" in v.detail


def test_the_instance_spread_applies_where_servers_are_parked_only() -> None:
    import dataclasses
    from pathlib import Path

    from pytest_rocm_llm.config.builds import CANDIDATE, Build
    from pytest_rocm_llm.config.settings import Settings
    from pytest_rocm_llm.verdicts.sequential import settings_design

    def run(target: str, image: str | None = None) -> SequentialDesign:
        base = Settings(TARGETS[target], None, None, None, 600.0, False, None, "127.0.0.1",
                        Path("."))
        return settings_design(dataclasses.replace(
            base, candidate=Build(CANDIDATE, None, {"X": "1"}, image=image)))

    assert run("cpu").per_block  # parked natively: fresh servers per block
    assert run("cpu").instance_cv == TARGETS["cpu"].instance_cv > 0
    assert not run("cpu", image="img:2").per_block  # restarted in containers at each switch
    assert not run("mi355x").per_block  # one server fits: stopped and restarted
    assert "fresh servers of both builds for every block" in run("cpu").describe()
    # the servers' spread sizes the default budget where blocks are the unit
    assert run("cpu").budget >= default_budget(TARGETS["cpu"].trial_cv)


def test_the_plan_expects_servers_own_levels_to_take_more_trials() -> None:
    from pytest_rocm_llm.verdicts.sequential import expected_trials

    plain, _ = expected_trials(SequentialDesign(4, 18, per_block=True), 0.01)
    spread, _ = expected_trials(SequentialDesign(4, 18, per_block=True, instance_cv=0.03),
                                0.01)
    assert spread > plain
