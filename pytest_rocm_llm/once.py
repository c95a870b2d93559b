"""Run each piece of work once per key and remember how it ended, result or error.

A session asks for the same workload or evaluation from several checks; the second asker
gets the first run's result, and after a failure the same exception again instead of a
second attempt against a server that already failed it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class RunOnce(Generic[K, V]):
    def __init__(self) -> None:
        self._results: dict[K, V] = {}
        self._errors: dict[K, Exception] = {}

    def get(self, key: K, run: Callable[[], V]) -> V:
        """``run()``'s result for ``key``, run on the first call only; its exception,
        raised again on every later call."""
        if key in self._errors:
            raise self._errors[key]
        if key not in self._results:
            try:
                self._results[key] = run()
            except Exception as exc:
                self._errors[key] = exc
                raise
        return self._results[key]

    @property
    def results(self) -> dict[K, V]:
        """The keys that succeeded so far and their results (a copy)."""
        return dict(self._results)
