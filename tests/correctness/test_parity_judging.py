"""``judge_parity`` on generations already collected: the speculation precondition at its
edge (accept length exactly 1.0 is no speculation), the near-tie allowance, the
continuation after a tie, failed requests, and the metrics and records a run reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from pytest_rocm_llm.client.completions import GreedyGeneration
from pytest_rocm_llm.correctness.parity import Comparison, describe, follow, judge_parity
from pytest_rocm_llm.serving.speculation import SpecCounters
from tests.correctness.test_parity_verdict_details import CONFIG, gen

PLAIN_TOP = {1: -0.1, 9: -3.0}


def no_continuation(ids: Sequence[int], n: int) -> GreedyGeneration:
    raise AssertionError("no near tie here, so no continuation")


def prompts(n: int) -> list[tuple[str, list[int]]]:
    return [(f"p{i}", [100 + i]) for i in range(n)]


def test_identical_speculating_outputs_agree_with_every_metric_reported() -> None:
    refs = [gen([1, 2, 3, 4]) for _ in range(3)]
    specs = [gen([1, 2, 3, 4], verify=2) for _ in range(3)]  # 4 tokens in 2 steps: 2.0
    r = judge_parity(CONFIG, prompts(3), refs, specs, None, no_continuation)
    assert r.problems == () and r.details == ()
    assert r.metrics == {"prompts": 3.0, "match_ratio": 1.0, "near_tie_ratio": 0.0,
                         "agree_ratio": 1.0, "near_ties": 0.0, "real_divergences": 0.0,
                         "real_divergences_first_k": 0.0, "failed_requests": 0.0,
                         "accept_length": 2.0}
    assert [(x["prompt_id"], x["outcome"], x["ref_tokens"], x["spec_tokens"],
             x["spec_accept_length"], x["near_ties"]) for x in r.records] == [
        (f"p{i}", "match", 4, 4, 2.0, []) for i in range(3)]


def test_accept_length_exactly_one_is_no_speculation() -> None:
    refs = [gen([1, 2, 3, 4])]
    r = judge_parity(CONFIG, prompts(1), refs, [gen([1, 2, 3, 4], verify=4)], None,
                     no_continuation)
    assert r.problems == ("the speculative server did not speculate: accept length 1.000 "
                          "tok/step over the parity requests (per-request spec_verify_ct)",)
    assert r.metrics["accept_length"] == 1.0
    ok = judge_parity(CONFIG, prompts(1), refs, [gen([1, 2, 3, 4], verify=3)], None,
                      no_continuation)
    assert ok.problems == () and ok.metrics["accept_length"] == pytest.approx(4 / 3)


def test_without_per_request_figures_the_counter_delta_decides() -> None:
    refs, specs = [gen([1, 2, 3, 4])], [gen([1, 2, 3, 4])]
    fine = judge_parity(CONFIG, prompts(1), refs, specs, SpecCounters(12.0, 4.0),
                        no_continuation)
    assert fine.problems == () and fine.metrics["accept_length"] == 3.0
    flat = judge_parity(CONFIG, prompts(1), refs, specs, SpecCounters(4.0, 4.0),
                        no_continuation)
    assert flat.problems == ("the speculative server did not speculate: accept length 1.000 "
                             "tok/step over the parity requests (the server's counters "
                             "before and after them)",)
    none = judge_parity(CONFIG, prompts(1), refs, specs, None, no_continuation)
    assert none.problems == ("the speculative server did not speculate: accept length None",)
    assert "accept_length" not in none.metrics
    # per-request figures win over the server's counters
    per = judge_parity(CONFIG, prompts(1), refs, [gen([1, 2, 3, 4], verify=4)],
                       SpecCounters(12.0, 4.0), no_continuation)
    assert per.metrics["accept_length"] == 1.0 and per.problems


def near_tie_pair() -> tuple[GreedyGeneration, GreedyGeneration]:
    """Both sides see tokens 2 and 3 within 0.05 nats at position 1; the reference ends
    there, so nothing after the tie is left to judge."""
    ref = gen([1, 2], [PLAIN_TOP, {2: -0.50, 3: -0.55}])
    spec = gen([1, 3], [PLAIN_TOP, {3: -0.50, 2: -0.55}], verify=1)
    return ref, spec


@pytest.mark.parametrize("n, credited", [(4, 2), (3, 1), (1, 0)])
def test_near_ties_are_credited_on_at_most_half_the_prompts(n: int, credited: int) -> None:
    refs, specs = zip(*(near_tie_pair() for _ in range(n)))
    r = judge_parity(CONFIG, prompts(n), refs, specs, None, no_continuation)
    assert r.metrics["near_tie_ratio"] == 1.0 and r.metrics["match_ratio"] == 0.0
    assert r.metrics["agree_ratio"] == pytest.approx(credited / n)
    assert r.metrics["near_ties"] == float(n)
    assert (f"near ties on {n} of {n} prompts exceed max_near_tie_ratio 0.5: only "
            f"{credited} count towards agree_ratio") in r.details
    assert f"agree ratio {credited / n:.3f} < min_agree_ratio 1.0" in r.details
    assert r.records[0]["near_ties"] == [1] and r.records[0]["outcome"] == "near_tie"


def test_after_a_near_tie_the_speculative_server_continues_the_references_path() -> None:
    ref = gen([1, 2, 5, 6], [PLAIN_TOP, {2: -0.50, 3: -0.55}, {5: -0.1, 7: -4.0},
                           {6: -0.1, 8: -4.0}])
    spec = gen([1, 3, 4, 4], [PLAIN_TOP, {3: -0.50, 2: -0.55}, PLAIN_TOP, PLAIN_TOP])
    asked: list[tuple[list[int], int]] = []

    def regenerate(ids: Sequence[int], n: int) -> GreedyGeneration:
        asked.append((list(ids), n))
        return gen([5, 8], [{5: -0.1, 7: -4.0}, {8: -0.1, 6: -4.0}])

    c, error = follow("p0", [100], ref, spec, CONFIG, regenerate)
    assert asked == [([100, 1, 2], 2)] and error is None
    assert (c.outcome, c.position, c.ref_token, c.spec_token, c.near_ties) == (
        "divergence", 3, 6, 8, (1,))


def test_failed_requests_are_problems_and_no_verdict() -> None:
    ref, spec = near_tie_pair()

    def failing(ids: Sequence[int], n: int) -> GreedyGeneration:
        return gen([], error="HTTP 503")

    long_ref = gen([1, 2, 5], [PLAIN_TOP, {2: -0.50, 3: -0.55}, PLAIN_TOP])
    r = judge_parity(CONFIG, prompts(2), [long_ref, ref], [spec, gen([], error="boom")],
                     None, failing)
    assert r.problems[0] == ("2 request(s) failed, e.g. p1 on the speculative server: boom")
    assert r.metrics["failed_requests"] == 2.0 and r.metrics["prompts"] == 0.0
    assert "no prompt produced output on both servers" in r.problems


def test_a_real_divergence_early_is_counted_and_described() -> None:
    ref = gen([1, 2, 3, 4])
    spec = gen([1, 9, 3, 4], [PLAIN_TOP, {9: -0.1, 2: -5.0}, PLAIN_TOP, PLAIN_TOP], verify=2)
    late = gen([1, 2, 3, 9], [PLAIN_TOP, PLAIN_TOP, PLAIN_TOP, {9: -0.1, 4: -5.0}], verify=2)
    config = replace(CONFIG, first_k=2)
    r = judge_parity(config, prompts(2), [ref, ref], [spec, late], None, no_continuation)
    assert r.metrics["real_divergences"] == 2.0
    assert r.metrics["real_divergences_first_k"] == 1.0
    assert r.details[0].startswith("p0: real divergence at token 1: reference 2 (logprob ")


def test_a_divergence_is_described_with_tokens_logprobs_and_the_ties_before_it() -> None:
    c = Comparison("p3", "divergence", 7, 42, None, -0.25, None, reason="one output ends",
                   near_ties=(1, 4))
    assert describe(c) == (
        "p3: real divergence at token 7 (on the reference's path after near tie(s) at "
        "token(s) 1, 4): reference 42 (logprob -0.2500) vs speculative (end) (logprob n/a); "
        "one output ends")
    assert describe(c, lambda ids: f"<{ids[0]}>").startswith(
        "p3: real divergence at token 7 (on the reference's path after near tie(s) at "
        "token(s) 1, 4): reference 42 '<42>' (logprob -0.2500) vs speculative (end) ")
    plain = Comparison("p0", "divergence", 0, None, 5, None, -1.0, reason="gap")
    assert describe(plain) == ("p0: real divergence at token 0: reference (end) (logprob n/a) "
                               "vs speculative 5 (logprob -1.0000); gap")


def test_the_continuation_is_judged_with_the_references_own_figures_at_each_position() -> None:
    """After the tie at token 1 the reference's later positions are compared with the
    continuation: its logprob at token 3 is read from its own chosen-token logprobs (its
    top-k there lacks it), and its top-k there holds the continuation's token."""
    ref = GreedyGeneration((1, 2, 5, 6), (-0.1, -0.5, -0.1, -0.2),
                           (PLAIN_TOP, {2: -0.50, 3: -0.55}, {5: -0.1, 7: -4.0}, {8: -0.3}),
                           "length", 4, None)
    spec = gen([1, 3, 4, 4], [PLAIN_TOP, {3: -0.50, 2: -0.55}, PLAIN_TOP, PLAIN_TOP])

    def regenerate(ids: Sequence[int], n: int) -> GreedyGeneration:
        return gen([5, 8], [{5: -0.1, 7: -4.0}, {8: -0.1, 6: -4.0}])

    c, _ = follow("p0", [100], ref, spec, CONFIG, regenerate)
    assert (c.outcome, c.position, c.ref_token, c.spec_token) == ("divergence", 3, 6, 8)
    assert (c.ref_logprob, c.spec_logprob) == (-0.2, -0.1)
    assert (c.ref_gap, c.spec_gap) == (pytest.approx(0.1), pytest.approx(3.9))
    assert c.reason == "logprob gap 3.900 > tolerance 0.1"
