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


def test_the_instance_spread_applies_wherever_the_target_has_one() -> None:
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
    # restarted in containers at each switch: still fresh servers for every block (a
    # restarted server serves adjacent slots, A | B B | A A, and would tie their pairs)
    assert run("cpu", image="img:2").per_block
    assert run("cpu", image="img:2").budget == run("cpu").budget
    # one server fits, its level assumed 0 until a node measures it: pairs are the unit
    assert not run("mi355x").per_block and not run("mi355x", image="img:2").per_block
    assert "fresh servers of both builds for every block" in run("cpu").describe()
    # the servers' spread sizes the default budget where blocks are the unit
    assert run("cpu").budget >= default_budget(TARGETS["cpu"].trial_cv)


def test_the_plan_expects_servers_own_levels_to_take_more_trials() -> None:
    from pytest_rocm_llm.verdicts.sequential import expected_trials

    plain, _ = expected_trials(SequentialDesign(4, 18, per_block=True), 0.01)
    spread, _ = expected_trials(SequentialDesign(4, 18, per_block=True, instance_cv=0.03),
                                0.01)
    assert spread > plain


def test_servers_restarted_at_each_switch_need_the_block_as_the_unit() -> None:
    # Why fresh_blocks covers the restart path (CI: two images of one build "regressed"
    # -4.6% [-7.6%, -1.6%]): with a server restarted at each switch, A | B B | A A | B B | A,
    # each server serves two adjacent slots and its own level (3%) ties their pairs. Judged
    # per pair, an unchanged build is called regressed at 3.5% (seeded; 1.3% at 2 trials per
    # build, 4.5% at 16) against alpha / 2 = 1%; with fresh servers for every block and the
    # block as the unit, 0.5%.
    import random

    from pytest_rocm_llm.verdicts.paired import balanced_order, paired_performance

    rng = random.Random(5)
    order = balanced_order(8)
    runs, cv, inst = 1500, 0.01, 0.03
    pairwise = per_block = 0
    for _ in range(runs):
        shared: list[float] = []  # restarted at each switch: a new level at each change
        fresh: list[float] = []  # and fresh at each block: its slots 0, 1-2 and 3
        level = 0.0
        levels: dict[tuple[int, int], float] = {}
        for slot, side in enumerate(order):
            if slot == 0 or side != order[slot - 1]:
                level = rng.gauss(0.0, inst)
            server = (slot // 4, min(slot % 4, 1) if slot % 4 < 3 else 3)
            own = levels.setdefault(server, rng.gauss(0.0, inst))
            noise = rng.gauss(0.0, cv)
            shared.append(100 * math.exp(level + noise))
            fresh.append(100 * math.exp(own + noise))

        def judged(xs: list[float], blocks: bool) -> str:
            a = [x for x, s in zip(xs, order) if s == "A"]
            b = [x for x, s in zip(xs, order) if s == "B"]
            return paired_performance("d", "speed", "tok/s", "higher", a, b, order=order,
                                      per_block=blocks).status

        pairwise += judged(shared, False) == "regressed"
        per_block += judged(fresh, True) == "regressed"
    assert pairwise / runs > 0.02, pairwise / runs
    assert per_block / runs <= 0.01, per_block / runs
