"""Run items through a sampler concurrently and score them into an ``EvalResult``.

A failed request is not a wrong answer: it is counted in ``failed_requests``, left out of
the accuracy, and named in ``problems`` so the plugin reports the run as unjudgeable rather
than as a regression. ``accuracy`` is the flexible score unless the config says strict.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pytest_rocm_llm.client.chat import ChatAnswer, Message
from pytest_rocm_llm.correctness.accuracy.items import Item, score
from pytest_rocm_llm.correctness.accuracy.stats import stderr
from pytest_rocm_llm.correctness.result import EvalResult

Sampler = Callable[[Sequence[Message]], Awaitable[ChatAnswer]]
SCORINGS = ("strict", "flexible")
PROGRESS_EVERY_S = 30.0
RESPONSE_CHARS = 2000  # of each output kept in records (never for confidential items)


class _Progress:
    def __init__(self, name: str, total: int, report: Callable[[str], None]) -> None:
        self.name, self.total, self.report = name, total, report
        self.done = self.failed = self.correct = 0
        self.start = self.last = time.monotonic()
        self.next_pct = 10

    def tick(self, ok: bool, correct: bool) -> None:
        self.done += 1
        self.failed += not ok
        self.correct += correct
        now = time.monotonic()
        pct = 100 * self.done // max(self.total, 1)
        if pct >= self.next_pct or now - self.last >= PROGRESS_EVERY_S or self.done == self.total:
            while self.next_pct <= pct:
                self.next_pct += 10
            self.last = now
            scored = self.done - self.failed
            acc = f"{self.correct / scored:.1%}" if scored else "n/a"
            self.report(f"[rocm-llm] eval {self.name}: {self.done}/{self.total} items "
                        f"({pct}%), running accuracy {acc}, {self.failed} failed requests, "
                        f"{now - self.start:.0f} s")


async def run_accuracy(
    eval_items: Sequence[Item],
    sampler: Sampler,
    concurrency: int,
    progress: Callable[[str], None],
    name: str,
    kind: str,
    scoring: str = "flexible",
) -> EvalResult:
    if scoring not in SCORINGS:
        raise ValueError(f"scoring {scoring!r} is not one of {', '.join(SCORINGS)}")
    confidential = any(item.confidential for item in eval_items)
    gate = asyncio.Semaphore(max(1, concurrency))
    tracker = _Progress(name, len(eval_items), progress)
    progress(f"[rocm-llm] eval {name} ({kind}): {len(eval_items)} items, concurrency "
             f"{concurrency}, scoring {scoring}")

    async def one(item: Item) -> tuple[Item, ChatAnswer]:
        async with gate:
            sample = await sampler(item.messages)
        s = score(item, sample.text) if sample.ok else None
        tracker.tick(sample.ok, bool(s and s.correct(item.gold, scoring)))
        return item, sample

    started = time.monotonic()
    done = await asyncio.gather(*(one(item) for item in eval_items))
    return summarize(done, name=name, kind=kind, scoring=scoring, confidential=confidential,
                     seconds=time.monotonic() - started)


def summarize(done: Sequence[tuple[Item, ChatAnswer]], *, name: str, kind: str, scoring: str,
              confidential: bool, seconds: float) -> EvalResult:
    records: list[Mapping[str, Any]] = []
    errors: list[tuple[str, str]] = []
    n = strict_ok = flexible_ok = invalid = truncated = cut_thinking = 0
    for item, sample in done:
        record: dict[str, Any] = {"id": item.id, "gold": item.gold,
                                  "finish_reason": sample.finish_reason}
        if not sample.ok:
            # Server error text can echo the prompt; confidential items keep only its kind.
            message = _status_only(sample.error) if confidential else sample.error
            errors.append((item.id, message or "request failed"))
            record.update(extracted=None, correct=None, error=message)
            records.append(record)
            continue
        s = score(item, sample.text)
        n += 1
        strict_ok += s.strict == item.gold
        flexible_ok += s.flexible == item.gold
        chosen = getattr(s, scoring)
        invalid += chosen is None
        truncated += sample.finish_reason == "length"
        # Cut at max_tokens while still thinking: no final answer, so it scores as none
        # (never the trace's last number); counted apart so the budget shows as the cause.
        cut_thinking += (sample.finish_reason == "length" and not sample.text.strip()
                         and bool(sample.reasoning))
        record.update(extracted=chosen, correct=chosen == item.gold, strict=s.strict,
                      flexible=s.flexible, completion_tokens=sample.completion_tokens,
                      reasoning_chars=len(sample.reasoning))
        if not confidential:
            record["response"] = sample.text[-RESPONSE_CHARS:]
        records.append(record)
    correct = strict_ok if scoring == "strict" else flexible_ok
    accuracy = correct / n if n else float("nan")
    metrics = {
        "accuracy": accuracy,
        "accuracy_strict": strict_ok / n if n else float("nan"),
        "accuracy_flexible": flexible_ok / n if n else float("nan"),
        "stderr": stderr(accuracy, n),
        "n": float(n),
        "correct": float(correct),
        "invalid_rate": invalid / n if n else float("nan"),
        "failed_requests": float(len(errors)),
        "items": float(len(done)),
        "truncated_rate": truncated / n if n else float("nan"),
        "cut_in_reasoning_rate": cut_thinking / n if n else float("nan"),
        "seconds": seconds,
    }
    problems: list[str] = []
    if errors:
        first_id, first = errors[0]
        problems.append(f"{len(errors)} of {len(done)} requests failed (first: item {first_id}: "
                        f"{first}); failed requests are not scored, so the accuracy is not "
                        "judged")
    if n == 0:
        problems.append("no item was scored" + (" (the eval has no items)" if not done else ""))
    details = [f"{name}: {correct}/{n} correct ({scoring}), strict {strict_ok}, flexible "
               f"{flexible_ok}, no answer found in {invalid}, cut at max_tokens in {truncated}"
               f" ({cut_thinking} of them while still reasoning: raise max_tokens)"]
    return EvalResult(name=name, kind=kind, metrics=metrics, records=tuple(records),
                      problems=tuple(problems), details=tuple(details))


def _status_only(error: str | None) -> str:
    # The sampler's errors are "<kind>: <detail>" (HTTP 400, ConnectError, malformed
    # response, ...); the detail is what may quote the request.
    return error.split(":", 1)[0] if error else "request failed"


def run_accuracy_sync(eval_items: Sequence[Item], sampler: Any, concurrency: int,
                      progress: Callable[[str], None], name: str, kind: str,
                      scoring: str = "flexible") -> EvalResult:
    """``run_accuracy`` from synchronous code (a test or fixture); closes the sampler."""

    async def main() -> EvalResult:
        try:
            return await run_accuracy(eval_items, sampler, concurrency, progress, name, kind,
                                      scoring)
        finally:
            close = getattr(sampler, "aclose", None)
            if close is not None:
                await close()

    return asyncio.run(main())
