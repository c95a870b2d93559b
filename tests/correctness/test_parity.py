"""The near-tie rule of speculative-decoding parity, its config, and its gate."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rocm_llm.client.completions import GreedyGeneration
from pytest_rocm_llm.config.toml import Table
from pytest_rocm_llm.correctness.parity import (
    ParityConfig,
    compare,
    natural_prompts,
    parity_prompts,
    parse_parity,
    random_id_prompts,
)
from pytest_rocm_llm.correctness.result import EvalResult
from pytest_rocm_llm.correctness.runs import EvalRuns
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.serving.server import LLMServer
from tests.toy_engine import Toy, serve

TOL = 0.1


def gen(ids: list[int], tops: list[dict[int, float]]) -> GreedyGeneration:
    return GreedyGeneration(tuple(ids), tuple(t[i] for i, t in zip(ids, tops)), tuple(tops),
                      "length", len(ids), None)


@st.composite
def outputs(draw: st.DrawFn, min_size: int = 1) -> tuple[list[int], list[dict[int, float]]]:
    """A greedy output with top-5 logprobs per position: the chosen token is the top one."""
    n = draw(st.integers(min_size, 12))
    ids, tops = [], []
    for _ in range(n):
        cands = draw(st.lists(st.integers(0, 50_000), min_size=5, max_size=5, unique=True))
        lps = sorted((x / 100 for x in draw(st.lists(st.integers(-2000, 0), min_size=5,
                                                      max_size=5))), reverse=True)
        ids.append(cands[0])
        tops.append(dict(zip(cands, lps)))
    return ids, tops


@given(outputs())
def test_identical_outputs_match(out) -> None:
    ids, tops = out
    assert compare("p", gen(ids, tops), gen(ids, tops), TOL).outcome == "match"
    assert compare("p", gen(ids, tops), gen(ids, tops), TOL, exact=True).outcome == "match"


@given(st.one_of(st.tuples(outputs(), outputs()).map(lambda p: (gen(*p[0]), gen(*p[1]))),
                 st.builds(lambda c: c[:2], st.deferred(lambda: swapped((0.0, 1.0))))),
       st.floats(0.0, 2.0))
def test_symmetric(pair, tol: float) -> None:
    x, y = pair
    ab, ba = compare("p", x, y, tol), compare("p", y, x, tol)
    assert (ab.outcome, ab.position) == (ba.outcome, ba.position)
    assert (ab.ref_token, ab.spec_token) == (ba.spec_token, ba.ref_token)


@st.composite
def swapped(draw: st.DrawFn, gap_range: tuple[float, float]):
    """A reference output and a speculative one that agree up to ``i``, where the two
    sides pick different tokens from a shared top-k with the given logprob gap."""
    ids, tops = draw(outputs(min_size=2))
    i = draw(st.integers(0, len(ids) - 1))
    a, b = ids[i], draw(st.integers(50_001, 60_000))
    gap = draw(st.floats(*gap_range))
    base = draw(st.floats(-5.0, -0.5))
    ref_top = {a: base, b: base - gap, **{t: base - 5 for t in list(tops[i])[1:4]}}
    # the speculative side prefers its own token (by 0..0.01): a negative gap is no tie
    spec_top = {b: base + draw(st.floats(0.0, 0.01)), a: base - gap}
    spec_top = {**spec_top, **{t: base - 5 for t in list(tops[i])[1:4]}}
    spec_ids = ids[:i] + [b] + [draw(st.integers(0, 50_000)) for _ in ids[i + 1:]]
    spec_tops = tops[:i] + [spec_top] + [{t: -1.0} for t in spec_ids[i + 1:]]
    ref = gen(ids, tops[:i] + [ref_top] + tops[i + 1:])
    return ref, gen(spec_ids, spec_tops), i


@given(swapped((0.0, TOL * 0.9)))
def test_swap_within_top_k_and_tolerance_is_a_near_tie(case) -> None:
    ref, spec, i = case
    c = compare("p", ref, spec, TOL)
    assert (c.outcome, c.position) == ("near_tie", i)
    assert compare("p", ref, spec, TOL, exact=True).outcome == "divergence"


@given(swapped((TOL * 1.2, 10.0)))
def test_swap_with_a_clear_winner_is_a_real_divergence(case) -> None:
    ref, spec, i = case
    c = compare("p", ref, spec, TOL)
    assert (c.outcome, c.position) == ("divergence", i)
    assert "tolerance" in c.reason


@given(swapped((0.0, TOL * 0.9)), st.booleans())
def test_token_outside_top_k_is_a_real_divergence_at_its_position(case, drop_ref: bool) -> None:
    ref, spec, i = case
    # remove the other side's token from one side's top-k
    victim, other = (ref, spec) if drop_ref else (spec, ref)
    tops = list(victim.top_logprobs)
    tops[i] = {t: v for t, v in tops[i].items() if t != other.token_ids[i]}
    victim = GreedyGeneration(victim.token_ids, victim.logprobs, tuple(tops), "length",
                        len(victim.token_ids), None)
    ref, spec = (victim, spec) if drop_ref else (ref, victim)
    c = compare("p", ref, spec, TOL)
    assert (c.outcome, c.position) == ("divergence", i)
    assert "top-k" in c.reason
    assert c.real_before(i + 1) and not c.real_before(i)


def test_an_output_that_stops_early_diverges_where_it_stops() -> None:
    ids, tops = [1, 2, 3], [{1: -0.1}, {2: -0.1}, {3: -0.1}]
    c = compare("p", gen(ids, tops), gen(ids[:2], tops[:2]), TOL)
    assert (c.outcome, c.position, c.ref_token, c.spec_token) == ("divergence", 2, 3, None)


@settings(max_examples=20)
@given(st.data())
def test_parity_prompts_strategy_draws_from_the_vocabulary(data) -> None:
    vocab = [5, 17, 99, 1234]
    prompt = data.draw(parity_prompts(vocab, min_len=2, max_len=6))
    assert 2 <= len(prompt) <= 6 and set(prompt) <= set(vocab)


def test_fixed_prompt_sets_are_seeded(reference_model_dir: Path, reference_vocab) -> None:
    a = random_id_prompts(reference_vocab.ids, 4, seed=3)
    assert a == random_id_prompts(reference_vocab.ids, 4, seed=3)
    assert a != random_id_prompts(reference_vocab.ids, 4, seed=4)
    nat = natural_prompts(str(reference_model_dir / "tokenizer.json"), 20, seed=0)
    assert len(nat) == 20 and len({tuple(p) for _, p in nat}) == 20
    assert all(p for _, p in nat)


def table(data: dict, path: str = "evals.spec") -> Table:
    return Table(data, Path("suite.toml"), path)


def test_parse_parity_defaults_and_override() -> None:
    c = parse_parity("spec", table({"kind": "parity", "profile": "eagle",
                                    "reference_profile": "plain", "tolerance": 0.2}))
    assert (c.profile, c.reference_profile, c.tolerance, c.exact) == ("eagle", "plain", 0.2,
                                                                      False)
    assert c.max_near_tie_ratio == 0.5  # "every prompt diverges at a near tie" cannot agree
    o = parse_parity("spec", table({"prompts": 4, "exact": True}), base=c)
    assert (o.prompts, o.exact, o.tolerance, o.profile) == (4, True, 0.2, "eagle")


@pytest.mark.parametrize("data, key, words", [
    ({"kind": "parity", "profile": "a", "reference_profile": "a"}, "reference_profile",
     "same profile"),
    ({"kind": "parity", "profile": "a", "reference_profile": "b", "tolerence": 1},
     "tolerence", "unknown key"),
    ({"kind": "parity", "profile": "a", "reference_profile": "b", "api": "chat"}, "api",
     "token ids"),
    ({"kind": "parity", "reference_profile": "b"}, "profile", "required"),
    ({"kind": "parity", "profile": "a", "reference_profile": "b", "top_logprobs": 0},
     "top_logprobs", "out of range"),
    ({"kind": "parity", "profile": "a", "reference_profile": "b", "max_near_tie_ratio": 1.5},
     "max_near_tie_ratio", "out of range"),
])
def test_parse_parity_errors_name_file_and_key(data, key, words) -> None:
    with pytest.raises(ConfigError) as e:
        parse_parity("spec", table(data))
    assert f"suite.toml: key 'evals.spec.{key}'" in str(e.value) and words in str(e.value)


@given(swapped((0.0, TOL * 0.5)), st.floats(0.001, TOL * 0.5), st.booleans())
def test_a_token_its_own_side_ranks_lower_is_a_real_divergence(case, under: float,
                                                               on_spec: bool) -> None:
    """abs() would call this a tie: the side emitted a token its own logprobs rank below the
    other side's token, i.e. it did not emit its own greedy choice (a wrongly accepted draft
    on the speculative side; a reference that is not greedy on the other)."""
    ref, spec, i = case
    victim, other = (spec, ref) if on_spec else (ref, spec)
    tops = list(victim.top_logprobs)
    mine = victim.token_ids[i]
    tops[i] = {**tops[i], other.token_ids[i]: tops[i][mine] + under}
    victim = GreedyGeneration(victim.token_ids, victim.logprobs, tuple(tops), "length",
                        len(victim.token_ids), None)
    ref, spec = (ref, victim) if on_spec else (victim, spec)
    c = compare("p", ref, spec, TOL)
    assert (c.outcome, c.position) == ("divergence", i)
    side = "speculative" if on_spec else "reference"
    assert f"the {side} side's own logprobs rank" in c.reason and "greedy" in c.reason


# -- the production runner (EvalRuns) against the toy engine over real HTTP ---------------

def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server(profile: str, url: str, engine: str, model_dir: Path) -> LLMServer:
    return LLMServer("s", profile, url, engine, "m", str(model_dir), (), {}, "test")


def run_eval(tmp_path: Path, model_dir: Path, ref: Toy, spec: Toy, engine: str = "sglang",
             **config: object) -> EvalResult:
    api = "generate" if engine == "sglang" else "completions"
    cfg = ParityConfig("parity", "parity", "spec", "ref", prompts=4, max_tokens=12, api=api,
                       **config)  # type: ignore[arg-type]
    with serve(ref) as ref_url, serve(spec) as spec_url:
        servers = {"ref": server("ref", ref_url, engine, model_dir),
                   "spec": server("spec", spec_url, engine, model_dir)}
        evals = EvalRuns(tmp_path, None, None, None, lambda m: None)
        return evals.get("s", cfg, servers.__getitem__)


def test_healthy_speculation_passes_with_the_runs_own_accept_length(
        tmp_path: Path, reference_model_dir: Path) -> None:
    r = run_eval(tmp_path, reference_model_dir, Toy(), Toy(accept=2.0))
    # both sources sglang offers, over the parity requests alone (the counters' lifetime is
    # 3.1), agree
    assert r.problems == () and r.details == (
        "accept length by source: meta_info 2.000 tok/step, /metrics counters 2.000 tok/step",)
    assert r.metrics["match_ratio"] == 1.0 and r.metrics["agree_ratio"] == 1.0
    # the parity requests' own value, not the server's lifetime 3.1
    assert r.metrics["accept_length"] == pytest.approx(2.0)


def test_per_request_accept_length_1_beats_a_server_lifetime_3_1(
        tmp_path: Path, reference_model_dir: Path) -> None:
    """The issue's probe: sglang's avg_spec_accept_length is cumulative since start (glm52
    runs its decode workload on the same server first); the parity requests did not
    speculate, so parity proves nothing."""
    r = run_eval(tmp_path, reference_model_dir, Toy(), Toy(accept=1.0, lifetime=3.1))
    assert any("did not speculate: accept length 1.000" in p for p in r.problems), r.problems


def test_accept_length_sources_that_disagree_are_not_judged(
        tmp_path: Path, reference_model_dir: Path) -> None:
    r = run_eval(tmp_path, reference_model_dir, Toy(), Toy(accept=2.0, counter_accept=3.0))
    assert any("accept length (tok/step) by source disagree beyond 2%: meta_info 2, "
               "/metrics counters 3: accept length not judged" in p for p in r.problems), \
        r.problems


@pytest.mark.parametrize("accepted_per_step, expected", [(0.0, 1.0), (1.0, 2.0)])
def test_vllm_accept_length_is_the_counter_delta_over_the_parity_requests(
        tmp_path: Path, reference_model_dir: Path, accepted_per_step: float,
        expected: float) -> None:
    """vLLM's counters stand at 3.1 since start; the run's own steps accept
    ``accepted_per_step`` each."""
    r = run_eval(tmp_path, reference_model_dir, Toy(), Toy(accepted_per_step=accepted_per_step),
                 engine="vllm")
    assert r.metrics.get("accept_length") == pytest.approx(expected)
    stalled = any("did not speculate" in p for p in r.problems)
    assert stalled == (expected == 1.0), r.problems


def test_every_prompt_diverging_at_a_near_tie_fails(tmp_path: Path,
                                                    reference_model_dir: Path) -> None:
    r = run_eval(tmp_path, reference_model_dir, Toy(plant_tie=True),
                 Toy(plant_tie=True, bias=0.06, accept=2.0))
    assert r.metrics["match_ratio"] == 0.0 and r.metrics["near_tie_ratio"] == 1.0
    assert r.metrics["agree_ratio"] == 0.5  # near ties credited up to the default share
    assert any("max_near_tie_ratio" in d for d in r.details), r.details
    assert r.metrics["real_divergences"] == 0
    # bound raised in the suite: the same run agrees (each tie was followed to the end)
    r = run_eval(tmp_path, reference_model_dir, Toy(plant_tie=True),
                 Toy(plant_tie=True, bias=0.06, accept=2.0), max_near_tie_ratio=1.0)
    assert r.metrics["agree_ratio"] == 1.0 and r.problems == ()
    assert [rec["near_ties"] for rec in r.records] == [[0]] * 4


def test_a_negative_gap_is_a_real_divergence(tmp_path: Path,
                                             reference_model_dir: Path) -> None:
    """The speculative side emits the runner-up its own logprobs rank 0.05 below the
    reference's token: within tolerance by abs(), but not its own greedy choice."""
    r = run_eval(tmp_path, reference_model_dir, Toy(plant_tie=True),
                 Toy(plant_tie=True, emit_runner_up=True, accept=2.0))
    assert r.metrics["real_divergences"] == 4 and r.metrics["real_divergences_first_k"] == 4
    assert r.metrics["near_tie_ratio"] == 0.0


def test_the_rest_of_the_sequence_is_judged_after_a_near_tie(
        tmp_path: Path, reference_model_dir: Path) -> None:
    """A near tie at token 0, then a real fault at token 5: the speculative server is put
    back on the reference's path after the tie and must reproduce the rest of it."""
    r = run_eval(tmp_path, reference_model_dir, Toy(plant_tie=True),
                 Toy(plant_tie=True, bias=0.06, wrong_at=5, accept=2.0),
                 max_near_tie_ratio=1.0)
    assert r.metrics["real_divergences"] == 4 and r.metrics["agree_ratio"] == 0.0
    assert r.metrics["real_divergences_first_k"] == 4
    assert [(rec["position"], rec["near_ties"]) for rec in r.records] == [(5, [0])] * 4
    assert all("real divergence at token 5" in d for d in r.details[:4]), r.details


def test_failed_requests_and_no_speculation_are_problems_not_a_pass(
        tmp_path: Path, reference_model_dir: Path) -> None:
    """A server that refuses connections (a real closed port, no double)."""
    dead = server("ref", f"http://127.0.0.1:{closed_port()}", "sglang", reference_model_dir)
    config = ParityConfig("spec", "parity", "spec", "ref", prompts=2)
    r = EvalRuns(tmp_path, None, None, None, lambda m: None).get(
        "s", config, lambda profile: dead)
    assert r.kind == "parity" and r.metrics["prompts"] == 0
    assert any("4 request(s) failed" in p for p in r.problems), r.problems
    assert any("no prompt produced output" in p for p in r.problems)
    assert any("did not speculate: accept length None" in p for p in r.problems)
