"""The project's own seeded arithmetic word problems: an accuracy eval that needs no data.

Problems are one or two steps on small whole numbers, easy enough that a 135M-parameter
model gets some right, so the CPU reference can show a real accuracy (and a broken build a
real drop). They go through the same prompt shape and scoring path as GSM8K. Shots come
from a separate seeded stream and never repeat a scored problem.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from pytest_rocm_llm.correctness.accuracy.gsm8k import INSTRUCTION
from pytest_rocm_llm.correctness.accuracy.items import NUMBER, Item

NAMES = ("Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goro", "Hana", "Ivan", "Jo")
THINGS = ("apples", "books", "coins", "pencils", "stickers", "marbles", "cards", "shells")


@dataclass(frozen=True)
class Problem:
    question: str
    solution: str  # worked steps ending in "#### N"
    answer: int


def _add(r: random.Random, who: str, what: str) -> Problem:
    a, b = r.randint(2, 30), r.randint(2, 30)
    return Problem(f"{who} has {a} {what}. A friend gives {who} {b} more {what}. How many "
                   f"{what} does {who} have now?", f"{a} + {b} = {a + b}\n#### {a + b}", a + b)


def _sub(r: random.Random, who: str, what: str) -> Problem:
    a = r.randint(10, 50)
    b = r.randint(1, a - 1)
    return Problem(f"{who} has {a} {what} and gives away {b} of them. How many {what} does "
                   f"{who} have left?", f"{a} - {b} = {a - b}\n#### {a - b}", a - b)


def _mul(r: random.Random, who: str, what: str) -> Problem:
    a, b = r.randint(2, 9), r.randint(2, 9)
    return Problem(f"{who} has {a} boxes with {b} {what} in each box. How many {what} does "
                   f"{who} have in total?", f"{a} * {b} = {a * b}\n#### {a * b}", a * b)


def _add_sub(r: random.Random, who: str, what: str) -> Problem:
    a, b = r.randint(5, 40), r.randint(2, 20)
    c = r.randint(1, a + b - 1)
    total = a + b - c
    return Problem(f"{who} has {a} {what}, buys {b} more, then gives {c} to a friend. How "
                   f"many {what} does {who} have now?",
                   f"{a} + {b} = {a + b}\n{a + b} - {c} = {total}\n#### {total}", total)


def _mul_add(r: random.Random, who: str, what: str) -> Problem:
    a, b, c = r.randint(2, 6), r.randint(2, 9), r.randint(1, 15)
    total = a * b + c
    return Problem(f"{who} buys {a} bags with {b} {what} in each bag and also finds {c} "
                   f"loose {what}. How many {what} does {who} have in total?",
                   f"{a} * {b} = {a * b}\n{a * b} + {c} = {total}\n#### {total}", total)


ONE_STEP: tuple[Callable[[random.Random, str, str], Problem], ...] = (_add, _sub, _mul)
TWO_STEP: tuple[Callable[[random.Random, str, str], Problem], ...] = (_add_sub, _mul_add)


def generate(n: int, seed: int, max_steps: int = 2, stream: str = "test") -> list[Problem]:
    """``n`` distinct problems; the same (n, seed, max_steps, stream) gives the same list."""
    r = random.Random(f"arithmetic:{stream}:{seed}")
    makers = ONE_STEP + (TWO_STEP if max_steps >= 2 else ())
    out: list[Problem] = []
    seen: set[str] = set()
    for _ in range(100 * n + 100):
        if len(out) == n:
            break
        p = r.choice(makers)(r, r.choice(NAMES), r.choice(THINGS))
        if p.question not in seen:
            seen.add(p.question)
            out.append(p)
    else:
        raise ValueError(f"cannot draw {n} distinct arithmetic problems (max_steps {max_steps})")
    return out


def build(*, count: int, shots: int, seed: int, max_steps: int = 2) -> list[Item]:
    problems = generate(count, seed, max_steps)
    scored = {p.question for p in problems}
    exemplars = [p for p in generate(shots + count, seed, max_steps, stream="shots")
                 if p.question not in scored][:shots]
    turns: list[dict[str, str]] = []
    for shot in exemplars:
        turns.append({"role": "user", "content": f"{INSTRUCTION}\n\n{shot.question}"})
        turns.append({"role": "assistant", "content": shot.solution})
    return [Item(id=f"arith-{seed}-{i}",
                 messages=(*turns, {"role": "user", "content": f"{INSTRUCTION}\n\n{p.question}"}),
                 gold=str(p.answer), answer_format=NUMBER) for i, p in enumerate(problems)]
