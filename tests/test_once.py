"""Run once, remember the error: the second asker gets the first run's result or exception."""

from __future__ import annotations

import pytest

from pytest_rocm_llm.once import RunOnce


def test_runs_once_per_key_and_raises_the_same_error_again() -> None:
    once: RunOnce[str, int] = RunOnce()
    calls: list[str] = []

    def run(key: str, fail: bool = False):
        def go() -> int:
            calls.append(key)
            if fail:
                raise RuntimeError(f"{key} broke")
            return len(calls)
        return go

    assert once.get("a", run("a")) == 1 and once.get("a", run("a")) == 1
    with pytest.raises(RuntimeError) as first:
        once.get("b", run("b", fail=True))
    with pytest.raises(RuntimeError) as second:
        once.get("b", run("b"))  # not run again: the same exception
    assert second.value is first.value
    assert calls == ["a", "b"] and once.results == {"a": 1}
