"""The account of engine starts (serving/start_ledger.py) and the budget tests/conftest.py
holds this suite to: which argv is which engine, the per-test table, and a run that starts
more engine servers than tests/engine_budget.toml allows fails, one at the budget passes.

The guard's inner runs write ledger records themselves (as ServerProcess does on every start,
tested in tests/serving/test_server_process.py) instead of launching dozens of real servers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rocm_llm.serving import start_ledger
from pytest_rocm_llm.serving.engines import get_engine
from tests.conftest import ROOT, _budget


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_an_engines_launch_line_is_that_engine(engine: str) -> None:
    argv = get_engine(engine).launch_argv(("/env/bin/python",), "/m/vllm-sglang-model", "m",
                                          "127.0.0.1", 30000, {})
    assert start_ledger.engine_of(argv) == engine
    assert start_ledger.engine_of(("python", "tests/toy_engine.py", "30000")) == "other"
    assert start_ledger.engine_of(("docker", "exec", "c", "python3", "-m",
                                   "sglang.launch_server")) == "sglang"


def test_the_account_puts_starts_to_their_test_heaviest_first(tmp_path: Path,
                                                              monkeypatch) -> None:
    ledger = tmp_path / "l.jsonl"
    monkeypatch.setenv(start_ledger.LEDGER_ENV, str(ledger))
    sglang = ("py", "-m", "sglang.launch_server")
    for i, (test, seconds) in enumerate([("t::a", 10.0), ("t::b", 30.0), ("t::b", 25.0)]):
        monkeypatch.setenv(start_ledger.CONTEXT_ENV, test)
        start_ledger.record("start", f"tag{i}", "s/p", sglang)
        start_ledger.record("ready", f"tag{i}", "s/p", sglang, seconds=seconds)
    with open(ledger, "a") as fh:
        fh.write('{"event": "start", "tag": "cut sh')  # a writer killed mid-line
    lines = start_ledger.account(start_ledger.read(ledger))
    assert lines[0].split() == ["2", "starts", "55", "s", "t::b", "(2", "sglang)"]
    assert lines[1].split()[:5] == ["1", "starts", "10", "s", "t::a"]
    assert lines[-1].split()[:4] == ["3", "starts", "65", "s"]
    assert start_ledger.read(ledger, skip=2)[0].tag == "tag1"  # an earlier run's lines skipped


GUARDED = """
from tests.conftest import (pytest_configure, pytest_runtest_protocol,
                            pytest_sessionfinish, pytest_terminal_summary)
"""
STARTS = """
import os
from pytest_rocm_llm.serving.start_ledger import record

def test_starts():
    for i in range(int(os.environ["N_STARTS"])):
        record("start", f"t{i}", "s/p", ("py", "-m", "sglang.launch_server"))
"""


@pytest.mark.parametrize("over", [0, 1])
def test_a_run_over_the_engine_budget_fails(pytester: pytest.Pytester, monkeypatch,
                                            over: int) -> None:
    monkeypatch.delenv(start_ledger.LEDGER_ENV, raising=False)  # the inner run keeps its own
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("N_STARTS", str(_budget() + over))
    pytester.makeconftest(GUARDED)
    pytester.makepyfile(test_starts=STARTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*engine starts: {_budget() + over} of a budget of "
                                 f"{_budget()}*"])
    if over:
        result.stdout.fnmatch_lines(["*FAILED: * engine server starts exceed the budget*"])
        assert result.ret == pytest.ExitCode.TESTS_FAILED
    else:
        assert result.ret == pytest.ExitCode.OK
