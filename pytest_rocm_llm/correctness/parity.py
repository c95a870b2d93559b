"""Speculative-decoding parity: greedy output with speculation must be greedy output.

The rule follows vLLM's spec-decode tests: compare token ids; at the first divergence accept
a near tie when each side's chosen token is in the other side's top-k there and each side
prefers its own token by at most ``tolerance`` nats (numerics of a different batch shape may
flip a near tie, never a clear winner). The gap is signed: a side whose own logprobs rank
the other side's token above the one it emitted did not emit its greedy choice (on the
speculative side, a wrongly accepted draft), so that is a real divergence however small.

After a near tie the two outputs have different contexts, so the speculative output says
nothing more; the rest of the reference's output is still judged: the speculative server
continues from the reference's own choice (prompt + reference tokens up to the tie) and
must reproduce the reference's remaining tokens by the same rule, tie after tie (``follow``).
Near ties are allowed as rare flips, not as the rule: ``agree_ratio`` credits them on at
most ``max_near_tie_ratio`` of the prompts. Engines with deterministic inference get
``exact = true``: only identical outputs agree.

A parity run whose speculative server did not speculate (accept length None or <= 1 over
the parity requests themselves, see ``speculation``) proves nothing: a problem, not a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Annotated, Any

from pydantic import Field, model_validator

from pytest_rocm_llm.client.completions import APIS, Endpoint, GreedyGeneration, generate_sync
from pytest_rocm_llm.client.tokenizer import load_tokenizer, tokenizer_file
from pytest_rocm_llm.config.fields import check
from pytest_rocm_llm.config.toml import Table, TomlTable, override_of, problem, validate
from pytest_rocm_llm.correctness.result import EvalResult
from pytest_rocm_llm.serving.speculation import SpecCounters, disagreement, from_generations

# A side's own chosen token may sit this far below another token of its own top-k and still
# count as its greedy choice: the chosen logprob and the top-k are gathered by different
# kernels, which may round one float32 value differently in its last place. Far below any
# tolerance; a real mis-ranking is larger.
ORDER_SLACK = 1e-6

# (prompt ids + the reference's tokens so far, tokens wanted) -> the speculative server's
# greedy continuation
Regenerate = Callable[[Sequence[int], int], GreedyGeneration]

NATURAL_PROMPTS = (
    "The capital of France is",
    "Write a Python function that returns the factorial of n.\n\ndef factorial(n):",
    "Question: What is 17 plus 25?\nAnswer:",
    "Once upon a time, in a small village by the sea,",
    "List three primary colors:\n1.",
    "Translate to French: 'The weather is nice today.'\nFrench:",
    "The main difference between a list and a tuple in Python is",
    "Photosynthesis is the process by which plants",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Q: If a train travels 60 km in 1.5 hours, what is its average speed?\nA:",
    "The three laws of thermodynamics are",
    "Dear hiring manager,\n\nI am writing to apply for",
    "SELECT name, COUNT(*) FROM orders",
    "A haiku about autumn leaves:\n",
    "Water boils at 100 degrees Celsius because",
    "Steps to make a cup of tea:\n1.",
)


@dataclass(frozen=True)
class ParityConfig:
    name: str
    kind: str  # "parity"
    profile: str  # the speculative server profile
    reference_profile: str  # the same model without speculation
    prompts: int = 16
    hypothesis_examples: int = 20
    max_tokens: int = 32
    top_logprobs: int = 5
    tolerance: float = 0.1  # nats between the two chosen tokens, as seen by each side
    first_k: int = 8  # a real divergence this early is counted on its own
    min_agree_ratio: float = 1.0
    max_near_tie_ratio: float = 0.5  # share of prompts whose agreement may rest on near ties
    exact: bool = False
    seed: int = 0
    api: str = "generate"
    source: str = "natural"  # natural (encoded short prompts) | random_ids

    def estimated_s(self, decode: float, prefill: float, batch: float | None) -> float:
        """One build's run (report/run_time.py): each prompt on both profiles, one at a
        time, every answer at max_tokens."""
        return 2.0 * (self.prompts + self.hypothesis_examples) * self.max_tokens / decode


@dataclass(frozen=True)
class Comparison:
    prompt_id: str
    outcome: str  # match | near_tie | divergence
    position: int | None = None  # first divergence
    ref_token: int | None = None
    spec_token: int | None = None
    ref_logprob: float | None = None  # each side's logprob of its own chosen token
    spec_logprob: float | None = None
    ref_gap: float | None = None  # ref's logprob(ref token) - logprob(spec token)
    spec_gap: float | None = None  # spec's logprob(spec token) - logprob(ref token)
    reason: str = ""
    near_ties: tuple[int, ...] = ()  # positions of the near ties followed on the way

    def real_before(self, first_k: int) -> bool:
        return self.outcome == "divergence" and self.position is not None and \
            self.position < first_k


def _lp(g: GreedyGeneration, i: int, token: int) -> float | None:
    top = g.top_logprobs[i] if i < len(g.top_logprobs) else {}
    if token in top:
        return top[token]
    if i < len(g.token_ids) and g.token_ids[i] == token:
        return g.logprobs[i]
    return None


def _tail(g: GreedyGeneration, start: int) -> GreedyGeneration:
    return replace(g, token_ids=g.token_ids[start:], logprobs=g.logprobs[start:],
                   top_logprobs=g.top_logprobs[start:],
                   completion_tokens=max(0, len(g.token_ids) - start))


def compare(prompt_id: str, ref: GreedyGeneration, spec: GreedyGeneration, tolerance: float,
            exact: bool = False, offset: int = 0) -> Comparison:
    """The near-tie rule at one first divergence (pure; no I/O). ``offset``: where these
    outputs start within the prompt's output (a continuation), for reported positions."""
    a, b = ref.token_ids, spec.token_ids
    i = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if i is None:
        if len(a) == len(b):
            return Comparison(prompt_id, "match")
        i = min(len(a), len(b))  # one output stopped early: a divergence at its end
        return Comparison(prompt_id, "divergence", offset + i,
                          a[i] if i < len(a) else None, b[i] if i < len(b) else None,
                          reason=f"one output ends at {offset + i} tokens, the other goes on "
                                 f"(finish {ref.finish_reason} vs {spec.finish_reason})")
    ta, tb = a[i], b[i]
    ra, rb = _lp(ref, i, ta), _lp(ref, i, tb)  # as the reference sees both
    sa, sb = _lp(spec, i, ta), _lp(spec, i, tb)  # as the speculative side sees both
    ref_gap = None if ra is None or rb is None else ra - rb
    spec_gap = None if sa is None or sb is None else sb - sa
    base: dict[str, Any] = {"ref_token": ta, "spec_token": tb, "ref_logprob": ra,
                            "spec_logprob": sb, "ref_gap": ref_gap, "spec_gap": spec_gap}
    pos = offset + i
    if exact:
        return Comparison(prompt_id, "divergence", pos, reason="exact mode", **base)
    if tb not in (ref.top_logprobs[i] if i < len(ref.top_logprobs) else {}):
        return Comparison(prompt_id, "divergence", pos,
                          reason="speculative token not in the reference's top-k", **base)
    if ta not in (spec.top_logprobs[i] if i < len(spec.top_logprobs) else {}):
        return Comparison(prompt_id, "divergence", pos,
                          reason="reference token not in the speculative side's top-k", **base)
    if ref_gap is None or spec_gap is None:
        # A side's own token without its logprob (a response without per-token logprobs, or
        # vLLM's None): nothing shows the two tokens are close, so no near tie is granted.
        return Comparison(prompt_id, "divergence", pos, reason=(
            "a side's logprob of its own token is missing: no evidence of a near tie"), **base)
    for side, gap in (("speculative", spec_gap), ("reference", ref_gap)):
        if gap < -ORDER_SLACK:
            return Comparison(prompt_id, "divergence", pos, reason=(
                f"the {side} side's own logprobs rank the other side's token {-gap:.4f} "
                f"above the token it emitted: not its greedy choice"), **base)
    if ref_gap <= tolerance and spec_gap <= tolerance:
        return Comparison(prompt_id, "near_tie", pos, **base)
    return Comparison(prompt_id, "divergence", pos,
                      reason=f"logprob gap {max(ref_gap, spec_gap):.3f} > "
                             f"tolerance {tolerance}", **base)


def follow(prompt_id: str, prompt_ids: Sequence[int], ref: GreedyGeneration, spec: GreedyGeneration,
           config: ParityConfig, regenerate: Regenerate) -> tuple[Comparison, str | None]:
    """The near-tie rule over the whole reference output: at each near tie, the speculative
    server continues from the reference's own choice and is compared with the rest of the
    reference's output (whose logprobs were computed on exactly that context). Returns
    ``match``, ``near_tie`` (every divergence a near tie, the rest reproduced) or the real
    divergence, at its position in the output; and the error of a continuation request
    that failed (the comparison is then no verdict). Each step moves past a tie, so there
    are at most ``max_tokens`` continuations."""
    c = compare(prompt_id, ref, spec, config.tolerance, config.exact)
    ties: list[int] = []
    tie = c
    while c.outcome == "near_tie":
        assert c.position is not None
        tie, start = c, c.position + 1
        ties.append(c.position)
        if start >= len(ref.token_ids):
            break  # the reference ends at the tie: nothing after it to judge
        cont = regenerate([*prompt_ids, *ref.token_ids[:start]], config.max_tokens - start)
        if cont.error:
            return replace(tie, near_ties=tuple(ties)), cont.error
        c = compare(prompt_id, _tail(ref, start), cont, config.tolerance, offset=start)
    return replace(c if c.outcome == "divergence" else tie, near_ties=tuple(ties)), None


def describe(c: Comparison, decode: Callable[[list[int]], str] | None = None) -> str:
    def tok(t: int | None) -> str:
        if t is None:
            return "(end)"
        return f"{t} {decode([t])!r}" if decode is not None else str(t)

    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.4f}"

    after = ("" if not c.near_ties else f" (on the reference's path after near tie(s) at "
             f"token(s) {', '.join(map(str, c.near_ties))})")
    return (f"{c.prompt_id}: real divergence at token {c.position}{after}: reference "
            f"{tok(c.ref_token)} (logprob {num(c.ref_logprob)}) vs speculative "
            f"{tok(c.spec_token)} (logprob {num(c.spec_logprob)}); {c.reason}")


def continuation(spec: Endpoint, config: ParityConfig) -> Regenerate:
    """``follow``'s continuations, from the speculative server."""
    return lambda ids, n: generate_sync(spec, [ids], n, config.top_logprobs)[0]


def parity_prompt_set(config: ParityConfig, model_path: str) -> list[tuple[str, list[int]]]:
    """The suite's fixed, seeded prompt set for this evaluation."""
    if config.source == "random_ids":
        from pytest_rocm_llm.performance.prompts import load_vocabulary

        return random_id_prompts(load_vocabulary(model_path).ids, config.prompts, config.seed)
    return natural_prompts(str(tokenizer_file(model_path)), config.prompts, config.seed)


def judge_parity(config: ParityConfig, prompts: Sequence[tuple[str, Sequence[int]]],
                 refs: Sequence[GreedyGeneration], specs: Sequence[GreedyGeneration],
                 counted: SpecCounters | None, regenerate: Regenerate,
                 decode: Callable[[list[int]], str] | None = None) -> EvalResult:
    """Compare generations already collected (the reference's and the speculative server's,
    in prompt order; the servers need not have run at the same time), asking the
    speculative server for continuations after near ties. ``counted``: the speculative
    server's counters over the parity requests alone (after minus before), used when the
    generations carry no per-request speculation figures."""
    problems: list[str] = []
    failures = [(pid, side, g.error) for (pid, _), r, s in zip(prompts, refs, specs)
                for side, g in (("reference", r), ("speculative", s)) if g.error]
    both = [(pid, ids, r, s) for (pid, ids), r, s in zip(prompts, refs, specs)
            if r.ok and s.ok]
    followed = [follow(pid, ids, r, s, config, regenerate) for pid, ids, r, s in both]
    failures += [(c.prompt_id, "speculative (continuation)", err) for c, err in followed if err]
    judged = [(c, r, s) for (c, err), (_, _, r, s) in zip(followed, both) if err is None]
    comps = [c for c, _, _ in judged]
    if failures:
        problems.append(f"{len(failures)} request(s) failed, e.g. {failures[0][0]} on the "
                        f"{failures[0][1]} server: {failures[0][2]}")
    if not comps:
        problems.append("no prompt produced output on both servers")
    per_request = from_generations(specs)
    measured = per_request if per_request is not None else counted
    al = None if measured is None else measured.accept_length
    sources: dict[str, float] = {
        name: length for name, c in (("meta_info", per_request), ("/metrics counters", counted))
        if c is not None and (length := c.accept_length) is not None}
    conflicts = [g.spec_conflict for g in specs if g.ok and g.spec_conflict]
    if conflicts:
        problems.append(f"{len(conflicts)} speculative answer(s) whose meta_info fields "
                        f"disagree, e.g. {conflicts[0]}: accept length not judged")
    clash = disagreement(sources, "accept length (tok/step) by source")
    if clash:
        problems.append(f"{clash}: accept length not judged")
    if al is None or al <= 1.0:
        source = ("" if al is None else " tok/step over the parity requests (" + (
            "per-request spec_verify_ct" if per_request is not None
            else "the server's counters before and after them") + ")")
        problems.append(f"the speculative server did not speculate: accept length "
                        f"{'None' if al is None else f'{al:.3f}'}{source}")
    n = len(comps)
    count = {o: sum(c.outcome == o for c in comps) for o in ("match", "near_tie", "divergence")}
    # Near ties are credited on at most this many prompts: a run agreeing mostly by near
    # ties is a speculative side whose numerics differ systematically, not by flips.
    allowed = int(config.max_near_tie_ratio * n + 1e-9)
    credited = min(count["near_tie"], allowed)
    metrics: dict[str, float] = {
        "prompts": float(n),
        "match_ratio": count["match"] / n if n else 0.0,
        "near_tie_ratio": count["near_tie"] / n if n else 0.0,
        "agree_ratio": (count["match"] + credited) / n if n else 0.0,
        "near_ties": float(sum(len(c.near_ties) for c in comps)),
        "real_divergences": float(count["divergence"]),
        "real_divergences_first_k": float(sum(c.real_before(config.first_k) for c in comps)),
        "failed_requests": float(len(failures)),
    }
    if al is not None:
        metrics["accept_length"] = al
    records = [{**asdict(c), "near_ties": list(c.near_ties), "ref_tokens": len(r.token_ids),
                "spec_tokens": len(s.token_ids), "spec_accept_length": s.accept_length}
               for c, r, s in judged]
    details = [describe(c, decode) for c in comps if c.outcome == "divergence"]
    if len(sources) > 1:  # the cross-check, in numbers
        details.append("accept length by source: " + ", ".join(
            f"{k} {v:.3f} tok/step" for k, v in sources.items()))
    if count["near_tie"] > allowed:
        details.append(f"near ties on {count['near_tie']} of {n} prompts exceed "
                       f"max_near_tie_ratio {config.max_near_tie_ratio}: only {allowed} "
                       f"count towards agree_ratio")
    if n and metrics["agree_ratio"] < config.min_agree_ratio:
        details.append(f"agree ratio {metrics['agree_ratio']:.3f} < min_agree_ratio "
                       f"{config.min_agree_ratio}")
    return EvalResult(config.name, "parity", metrics, tuple(records), tuple(problems),
                      tuple(details))


def check_prompt(config: ParityConfig, ref: Endpoint, spec: Endpoint,
                 prompt_ids: Sequence[int], prompt_id: str = "hypothesis") -> Comparison:
    """One prompt through both servers, judged as in a parity run (``follow``); for
    ``@given(parity_prompts(...))`` suite tests:
    ``assert not check_prompt(...).real_before(config.first_k)``. A failed request raises
    RuntimeError (an infrastructure failure, not a divergence to shrink)."""
    r, s = (generate_sync(e, [prompt_ids], config.max_tokens, config.top_logprobs)[0]
            for e in (ref, spec))
    for side, g in (("reference", r), ("speculative", s)):
        if g.error:
            raise RuntimeError(f"{side} request failed: {g.error}")
    c, error = follow(prompt_id, prompt_ids, r, s, config, continuation(spec, config))
    if error:
        raise RuntimeError(f"speculative continuation request failed: {error}")
    return c


def random_id_prompts(ids: Sequence[int], count: int, seed: int, min_len: int = 8,
                      max_len: int = 64) -> list[tuple[str, list[int]]]:
    """Seeded prompts of random ordinary-vocabulary ids (``prompts.Vocabulary.ids``)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    pool = np.asarray(ids)
    return [(f"random-{i}", rng.choice(pool, size=int(rng.integers(min_len, max_len + 1)))
             .tolist()) for i in range(count)]


def natural_prompts(tokenizer_path: str, count: int, seed: int) -> list[tuple[str, list[int]]]:
    """``count`` short natural prompts encoded with the model's tokenizer.json; beyond the
    built-in set, seeded pairs of them joined by a blank line."""
    import random

    tok = load_tokenizer(tokenizer_path)
    rng = random.Random(seed)
    texts = list(NATURAL_PROMPTS)
    while len(texts) < count:
        a, b = rng.sample(NATURAL_PROMPTS, 2)
        texts.append(f"{a} {rng.choice(('yes', 'no', 'maybe'))}.\n\n{b}")
    return [(f"natural-{i}", tok.encode(t).ids) for i, t in enumerate(texts[:count])]


def parity_prompts(vocab: Any, min_len: int = 1, max_len: int = 48) -> Any:
    """A Hypothesis strategy of prompts (lists of ids from ``vocab``: a ``Vocabulary`` or a
    sequence of ids). Use with ``settings(max_examples=config.hypothesis_examples,
    derandomize=True, database=None)`` so a diverging prompt is shrunk and reproducible."""
    from hypothesis import strategies as st  # test-time dependency, imported on use

    ids = getattr(vocab, "ids", vocab)
    return st.lists(st.sampled_from([int(i) for i in ids]), min_size=min_len,
                    max_size=max_len)


class ParityTable(TomlTable):
    """``[evals.<name>]`` of kind parity, as written in suite.toml."""

    kind: Annotated[str, check(lambda k: k == "parity",
                               lambda k: f"{k!r}: this table is read as a parity evaluation")] \
        = "parity"
    profile: str
    reference_profile: str
    prompts: int = Field(16, ge=1, le=100_000)
    hypothesis_examples: int = Field(20, ge=0, le=100_000)
    max_tokens: int = Field(32, ge=1, le=100_000)
    top_logprobs: int = Field(5, ge=1, le=100)
    tolerance: float = Field(0.1, ge=0.0)
    first_k: int = Field(8, ge=0)
    min_agree_ratio: float = Field(1.0, ge=0.0, le=1.0)
    max_near_tie_ratio: float = Field(0.5, ge=0.0, le=1.0)
    exact: bool = False
    seed: int = Field(0, ge=0)
    api: Annotated[str, check(lambda a: a in APIS, lambda a: (
        f"{a!r}: parity needs token ids and logprobs: {' or '.join(repr(x) for x in APIS)}"))] \
        = "generate"
    source: Annotated[str, check(lambda s: s in ("natural", "random_ids"),
                                 lambda s: f"{s!r} is not 'natural' or 'random_ids'")] \
        = "natural"

    @model_validator(mode="after")
    def _two_servers(self) -> ParityTable:
        if self.profile == self.reference_profile:
            raise problem("reference_profile", (
                f"is the same profile as 'profile' ({self.profile!r}): parity compares a "
                "speculative server with a plain one"))
        return self


def parse_parity(name: str, t: Table, base: ParityConfig | None = None) -> ParityConfig:
    """``[evals.<name>]`` with ``kind = "parity"``; with ``base``, a per-target override."""
    table = validate(ParityTable, t, override_of(ParityTable, base, t.data))
    return ParityConfig(name=name, **table.model_dump())
