"""Long-context coherence: seeded synthetic retrieval tasks at exact token lengths.

Tasks (after the passkey test of Mohtashami & Jaggi 2023 and RULER's niah_multikey and
variable tracking, Hsieh et al. 2024), generated locally, nothing downloaded:
- ``passkey``: a 5-digit pass key hidden at a chosen depth of filler text.
- ``multikey``: several "special magic number for <word>" needles; one is asked for.
- ``variable``: VAR A = 12345, VAR B = A, ... spread through the filler, interleaved with
  distractor chains of their own values; the value of the last variable of one chain is
  asked for, so "the only number in the prompt" is never the answer.

Each prompt is assembled from separately encoded pieces (model tokenizer.json) and sent
as ``input_ids``, so the server sees exactly ``length`` tokens; the server's own
``prompt_tokens`` is checked against it. Scoring is exact (``score``): a substring match
would credit an output that lists every number of the prompt. Every output also runs
through the degeneration detectors, and a degenerate output is never correct.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, create_model

from pytest_rocm_llm.client.completions import APIS, Endpoint, generate_sync
from pytest_rocm_llm.client.tokenizer import load_tokenizer
from pytest_rocm_llm.config.fields import NumberList, StrList, check, each_one_of
from pytest_rocm_llm.config.toml import Table, TomlTable, override_of, validate
from pytest_rocm_llm.correctness.context_fit import check_served
from pytest_rocm_llm.correctness.degeneration import Thresholds, detect
from pytest_rocm_llm.correctness.result import EvalResult
from pytest_rocm_llm.excerpt import clip, quoted

TASKS = ("passkey", "multikey", "variable")

_SUBJECTS = ("The farmer", "A small bird", "The old clock", "My neighbour", "The river",
             "A quiet student", "The baker", "The train", "Our teacher", "The wind",
             "A tall tree", "The cat", "The sailor", "An engineer", "The library")
_VERBS = ("watched", "carried", "painted", "remembered", "followed", "opened", "visited",
          "described", "counted", "repaired", "found", "ignored")
_OBJECTS = ("the green hills", "a wooden box", "the morning market", "an empty road",
            "the blue door", "a long letter", "the city lights", "a paper map",
            "the quiet harbour", "an old song", "the garden wall", "a warm loaf")
_TAILS = ("before noon", "in the rain", "with great care", "for a while", "again",
          "without a word", "near the bridge", "after dinner", "at dawn", "once more")
_DISTRACTOR_CHAINS = 2
_NUMBER = re.compile(r"\d+")
_KEYS = ("apple", "river", "candle", "falcon", "marble", "violet", "anchor", "pepper",
         "lantern", "meadow", "copper", "thunder", "harbor", "saddle", "walnut", "glacier")


@dataclass(frozen=True)
class LongContextConfig:
    name: str
    kind: str  # "long_context"
    profile: str | None
    lengths: tuple[int, ...]
    tasks: tuple[str, ...] = TASKS
    samples: int = 4  # per (task, length); needle depths cycle through ``depths``
    depths: tuple[float, ...] = (0.1, 0.5, 0.9)
    max_tokens: int = 32
    seed: int = 0
    thresholds: Thresholds = field(default_factory=Thresholds)
    api: str = "generate"

    def estimated_s(self, decode: float, prefill: float, batch: float | None) -> float:
        """One build's run (report/run_time.py): every item of every length prefilled and
        answered at max_tokens, one at a time."""
        items = len(self.tasks) * self.samples
        return float(sum(items * (n / prefill + self.max_tokens / decode)
                         for n in self.lengths))


@dataclass(frozen=True)
class Item:
    task: str
    length: int
    sample: int
    depth: float
    answer: str
    input_ids: tuple[int, ...]
    # the other values the prompt holds (other keys', other chains'): naming one is wrong
    distractors: tuple[str, ...] = ()


class _Encoder:
    def __init__(self, tokenizer_path: str) -> None:
        self.tok = load_tokenizer(tokenizer_path)
        self.special_prefix = self.tok.encode("", add_special_tokens=True).ids  # e.g. BOS

    def __call__(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int]) -> str:
        return self.tok.decode(list(ids))


def _sentence(rng: random.Random) -> str:
    return (f" {rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} "
            f"{rng.choice(_TAILS)}.")


def _filler(enc: _Encoder, rng: random.Random, n: int) -> list[list[int]]:
    """Sentences of exactly ``n`` tokens in total (the last one cut to fit)."""
    out: list[list[int]] = []
    total = 0
    while total < n:
        ids = enc(_sentence(rng))[: n - total]
        out.append(ids)
        total += len(ids)
    return out


def _number(rng: random.Random, digits: int) -> str:
    return str(rng.randrange(10 ** (digits - 1), 10 ** digits))


def _needles(task: str, rng: random.Random, depth: float) -> tuple[str, str, str,
                                                                   list[tuple[float, str]]]:
    """(instruction, question, answer, [(depth, needle text)])."""
    if task == "passkey":
        key = _number(rng, 5)
        return (("There is a pass key hidden inside a lot of irrelevant text. Find it and "
                 "remember it.\n"),
                "\nWhat is the pass key? The pass key is", key,
                [(depth, f" The pass key is {key}. Remember it. {key} is the pass key.")])
    if task == "multikey":
        words = rng.sample(_KEYS, 4)
        values = [_number(rng, 7) for _ in words]
        placed = [(depth, (f" One of the special magic numbers for {words[0]} is: "
                           f"{values[0]}."))]
        placed += [(rng.random(), f" One of the special magic numbers for {w} is: {v}.")
                   for w, v in zip(words[1:], values[1:])]
        return ("Some special magic numbers are hidden in the text below. Memorize them.\n",
                (f"\nWhat is the special magic number for {words[0]}? The special magic "
                 f"number for {words[0]} is:"), values[0], placed)
    if task == "variable":
        # RULER's variable tracking with distractor chains: each chain starts from its own
        # value, so the asked chain's value is one of several numbers in the prompt.
        hops, chains = 4, 1 + _DISTRACTOR_CHAINS
        names: list[str] = []
        while len(names) < hops * chains:  # unique, as a repeated name would merge chains
            name = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(5))
            names += [name] if name not in names else []
        values: list[str] = []
        while len(values) < chains:
            value = _number(rng, 5)
            values += [value] if value not in values else []
        placed: list[tuple[float, str]] = []
        for c in range(chains):
            chain = names[c * hops:(c + 1) * hops]
            text = [f" VAR {chain[0]} = {values[c]}."] + [
                f" VAR {b} = {a}." for a, b in pairwise(chain)]
            # the asked chain ends at ``depth``; distractors anywhere, each in order
            spread = ([depth * (i + 1) / hops for i in range(hops)] if c == 0
                      else sorted(rng.random() for _ in range(hops)))
            placed += zip(spread, text)
        asked = names[hops - 1]
        return (("Memorize and track the chain of variable assignments hidden in the "
                 "text below.\n"),
                f"\nQuestion: what is the value of VAR {asked}? Answer: VAR {asked} =",
                values[0], placed)
    raise ValueError(f"unknown task {task!r}")


def build_item(enc: _Encoder, task: str, length: int, sample: int, depth: float,
               seed: int) -> Item:
    """One prompt of exactly ``length`` tokens."""
    rng = random.Random(f"{seed}/{task}/{length}/{sample}")
    head, question, answer, needles = _needles(task, rng, depth)
    fixed = [enc.special_prefix, enc(head), enc(question)]
    needle_ids = [(d, enc(t)) for d, t in sorted(needles, key=lambda x: x[0])]
    used = sum(map(len, fixed)) + sum(len(ids) for _, ids in needle_ids)
    if used >= length:
        raise ValueError(f"long-context length {length} is too short for task {task!r}: its "
                         f"instructions and needles alone take {used} tokens")
    sentences = _filler(enc, rng, length - used)
    total = sum(map(len, sentences))
    body: list[int] = []
    cum = 0
    pending = list(needle_ids)
    for s in sentences:
        while pending and cum >= pending[0][0] * total:
            body += pending.pop(0)[1]
        body += s
        cum += len(s)
    for _, ids in pending:
        body += ids
    ids = fixed[0] + fixed[1] + body + fixed[2]
    assert len(ids) == length, (len(ids), length)
    others = {n for _, text in needles for n in _NUMBER.findall(text)} - {answer}
    return Item(task, length, sample, depth, answer, tuple(ids), tuple(sorted(others)))


def build_items(config: LongContextConfig, tokenizer_path: str) -> list[Item]:
    enc = _Encoder(tokenizer_path)
    return [build_item(enc, task, length, s, config.depths[s % len(config.depths)],
                       config.seed)
            for length in config.lengths for task in config.tasks
            for s in range(config.samples)]


# The answer is the output's first sentence or line that holds a number: a preamble with
# none ("Sure!", "Here is what I found.") is skipped, as RULER's substring match never
# reads it (RULER scores "Sure! The pass key is 48213." right; the first sentence alone
# scored it wrong). What follows the answer is the model going on (often echoing the
# needle, cut mid-number by max_tokens), judged only for naming another candidate or
# repeating the answer. Stricter than RULER's string_match_all (the expected value
# anywhere in the output) where RULER credits a non-answer: a list of candidates, a
# longer number containing the value, a loop; on tests/correctness/scoring_corpus.py
# these are the only outputs where the two disagree.
_SEGMENT = re.compile(r"(?<=[.!?])\s+|\n+")
_LOOP = 3  # the answer said 3 times as sentences of its own: looping, not answering


def score(expected: str, output: str, distractors: Sequence[str] = (),
          degenerate: bool = False) -> bool:
    """Exact: the output's first sentence holding a number holds exactly one, and it is
    ``expected`` (so "48213 or 91730" and a longer number containing it are wrong), no
    other candidate value of the prompt appears anywhere (an output listing them is wrong
    even when it starts with the right one), the answer is not repeated as a sentence of
    its own ``_LOOP`` times, and the output is not degenerate."""
    segments = [s.strip() for s in _SEGMENT.split(output.strip()) if s.strip()]
    numbered = [s for s in segments if _NUMBER.search(s)]
    if degenerate or not numbered:
        return False
    answer = numbered[0].rstrip(".!?")
    if _NUMBER.findall(answer) != [expected]:
        return False
    if set(_NUMBER.findall(output)) & set(distractors):
        return False
    return sum(s.rstrip(".!?") == answer for s in segments) < _LOOP


def run_long_context(config: LongContextConfig, endpoint: Endpoint, tokenizer_path: str,
                     progress: Callable[[str], None]) -> EvalResult:
    # before any request: a length the server cannot hold is a configuration error, not
    # a run of failed requests
    check_served(config.name, config.lengths, config.max_tokens, endpoint,
                 Path(tokenizer_path).parent)
    items = build_items(config, tokenizer_path)
    decode = _Encoder(tokenizer_path).decode
    progress(f"[rocm-llm] {config.name}: {len(items)} prompts at lengths "
             f"{', '.join(map(str, config.lengths))}")
    gens = generate_sync(endpoint, [it.input_ids for it in items], config.max_tokens,
                         progress=progress, label=config.name)
    records: list[dict[str, Any]] = []
    details: list[str] = []
    failed = [(it, g) for it, g in zip(items, gens) if not g.ok]
    problems = [(f"{len(failed)} request(s) failed, e.g. {failed[0][0].task}@"
                 f"{failed[0][0].length}: {failed[0][1].error}")] if failed else []
    mismatched = [(it, g) for it, g in zip(items, gens)
                  if g.ok and g.prompt_tokens is not None and g.prompt_tokens != it.length]
    if mismatched:
        it, g = mismatched[0]
        problems.append(f"{len(mismatched)} prompt(s) reached the server at another length, "
                        f"e.g. {it.length} tokens sent, {g.prompt_tokens} reported")
    for it, g in zip(items, gens):
        text = decode(g.token_ids) if g.ok else ""
        findings = detect(text, config.thresholds) if g.ok else []
        records.append({
            # the same item on both builds of a paired run (plugin/paired_checks.py)
            "id": f"{it.task}@{it.length}/{it.sample}/{it.depth}",
            "task": it.task, "length": it.length, "sample": it.sample, "depth": it.depth,
            "answer": it.answer,
            "correct": g.ok and score(it.answer, text, it.distractors, bool(findings)),
            "ok": g.ok,
            "error": g.error, "prompt_tokens": g.prompt_tokens,
            "completion_tokens": g.completion_tokens, "latency_s": g.latency_s,
            "degenerate": [str(f) for f in findings], "output": clip(text, 200)})
        for f in findings:
            details.append(f"degenerate output: {it.task}@{it.length} sample {it.sample}: "
                           f"{f.detector} = {f.value:.3g} (threshold {f.threshold:g}); "
                           f"output starts {quoted(text, 80)}")
    metrics: dict[str, float] = {}
    accs = []
    for length in config.lengths:
        rows = [r for r in records if r["length"] == length and r["ok"]]
        if not rows:
            continue
        acc = sum(r["correct"] for r in rows) / len(rows)
        accs.append((length, acc))
        metrics[f"accuracy@{length}"] = acc
        metrics[f"degenerate@{length}"] = float(sum(bool(r["degenerate"]) for r in rows))
        for task in config.tasks:
            trows = [r for r in rows if r["task"] == task]
            if trows:
                metrics[f"{task}_accuracy@{length}"] = \
                    sum(r["correct"] for r in trows) / len(trows)
    if not accs:
        problems.append("no prompt produced output")
    else:
        metrics["accuracy_min"] = min(a for _, a in accs)
        metrics["degenerate_outputs"] = float(sum(bool(r["degenerate"]) for r in records))
        metrics["samples"] = float(sum(r["ok"] for r in records))
        details.append("accuracy by length: " + ", ".join(f"{n}: {a:.0%}" for n, a in accs))
        drops = [(a0, n0, a1, n1) for (n0, a0), (n1, a1) in pairwise(accs) if a1 < a0]
        if drops:
            a0, n0, a1, n1 = max(drops, key=lambda d: d[0] - d[2])
            details.append(f"accuracy falls most from {a0:.0%} at {n0} tokens to {a1:.0%} at "
                           f"{n1} tokens")
    return EvalResult(config.name, "long_context", metrics, tuple(records), tuple(problems),
                      tuple(details))


def _thresholds_table() -> type[TomlTable]:
    """``[evals.<name>.thresholds]``: every degeneration threshold, its type kept, >= 0."""
    defaults = Thresholds()
    spec: dict[str, Any] = {f: (type(getattr(defaults, f)), Field(getattr(defaults, f), ge=0))
                            for f in Thresholds.__dataclass_fields__}
    return create_model("ThresholdsTable", __base__=TomlTable, **spec)


ThresholdsTable = _thresholds_table()


def _whole_lengths(lengths: tuple[float, ...]) -> bool:
    return bool(lengths) and all(n == int(n) and n >= 256 for n in lengths)


class LongContextTable(TomlTable):
    """``[evals.<name>]`` of kind long_context, as written in suite.toml."""

    kind: Annotated[str, check(lambda k: k == "long_context", lambda k: (
        f"{k!r}: this table is read as a long_context evaluation"))] = "long_context"
    profile: str | None = None
    lengths: Annotated[NumberList, check(_whole_lengths, lambda v: (
        f"{list(v)!r}: expected whole token counts >= 256, e.g. [2048, 8192, 32768]"))]
    tasks: Annotated[StrList, each_one_of(TASKS), check(bool, lambda _: (
        f"expected at least one of {', '.join(TASKS)}"))] = TASKS
    samples: int = Field(4, ge=1, le=100_000)
    depths: Annotated[NumberList, check(lambda v: bool(v) and all(0.0 <= x <= 1.0 for x in v),
                                        lambda v: (f"{list(v)!r}: expected fractions of the "
                                                   "context in [0, 1]"))] = (0.1, 0.5, 0.9)
    max_tokens: int = Field(32, ge=1, le=100_000)
    seed: int = Field(0, ge=0)
    thresholds: ThresholdsTable = Field(default_factory=ThresholdsTable)  # type: ignore[valid-type]
    api: Annotated[str, check(lambda a: a in APIS, lambda a: (
        f"{a!r}: long-context prompts are token ids: {' or '.join(repr(x) for x in APIS)}"))] \
        = "generate"


def parse_long_context(name: str, t: Table,
                       base: LongContextConfig | None = None) -> LongContextConfig:
    """``[evals.<name>]`` with ``kind = "long_context"``; with ``base``, a per-target
    override. An optional ``[evals.<name>.thresholds]`` sets the degeneration thresholds."""
    table = validate(LongContextTable, t, override_of(LongContextTable, base, t.data))
    fields = table.model_dump()
    return LongContextConfig(name=name, **{
        **fields, "lengths": tuple(int(n) for n in table.lengths),
        "thresholds": Thresholds(**fields["thresholds"])})
