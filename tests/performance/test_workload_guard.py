"""The guard around a workload run: a watch that raises (the server died) or the workload's
timeout_s ends the run at once, and the runner is cancelled rather than left running."""

from __future__ import annotations

import asyncio

import pytest

from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.performance.workloads import WorkloadTimeout, _guarded

W = Workload(name="w", kind="fixed_rate", profile=None, api="generate", input_tokens=8,
             output_tokens=2, requests=1, request_rate=1.0)


class Dead(Exception):
    pass


def run(w: Workload, watch) -> tuple[BaseException | None, bool]:
    cancelled = False

    async def forever() -> None:
        nonlocal cancelled
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled = True
            raise

    async def go() -> None:
        await _guarded(w, forever(), watch, poll_s=0.001)

    try:
        asyncio.run(go())
    except BaseException as exc:  # noqa: BLE001 - the outcome is what is under test
        return exc, cancelled
    return None, cancelled


def test_a_raising_watch_ends_the_run_and_cancels_the_runner() -> None:
    calls = []

    def watch() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise Dead("server process exited with code -9")

    exc, cancelled = run(W, watch)
    assert isinstance(exc, Dead) and cancelled and len(calls) == 3


def test_timeout_s_ends_a_run_that_never_finishes() -> None:
    from dataclasses import replace

    exc, cancelled = run(replace(W, timeout_s=0.01), None)
    assert isinstance(exc, WorkloadTimeout) and cancelled
    assert "workload w did not finish within its timeout_s = 0.01 s" in str(exc)


def test_a_finished_run_returns_its_result() -> None:
    async def done() -> str:
        return "result"

    assert asyncio.run(_guarded(W, done(), lambda: None, poll_s=0.001)) == "result"


def test_timeout_s_is_validated() -> None:
    import tomllib
    from pathlib import Path

    from pytest_rocm_llm.config.toml import Table
    from pytest_rocm_llm.config.workload import parse_workload

    data = tomllib.loads('kind = "single_stream"\ninput_tokens = 8\noutput_tokens = 2\n'
                        'requests = 1\ntimeout_s = 0')
    with pytest.raises(ConfigError, match="key 'workloads.w.timeout_s'"):
        parse_workload("w", Table(data, Path("suite.toml"), "workloads.w"))
