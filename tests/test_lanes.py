"""The suite's two lanes (tests/conftest.py): under pytest-xdist a test marked ``alone`` runs
with no other test running on the other worker, while unmarked tests do run side by side.
The inner run uses the project's own hooks (imported from tests/conftest.py)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT

LANES = """
from tests.conftest import pytest_configure, pytest_runtest_protocol
"""
TESTS = """
import json, os, time
import pytest

def spell(name):
    t0 = time.time()
    time.sleep(1.0)
    with open(os.environ["LANES_OUT"], "a") as fh:
        fh.write(json.dumps({"name": name, "t0": t0, "t1": time.time()}) + "\\n")

# Two groups, so both workers are busy from the start: x's alone test comes while y's
# tests are running.
@pytest.mark.xdist_group("x")
def test_x0():
    spell("x0")

@pytest.mark.xdist_group("x")
@pytest.mark.alone
def test_x1_measured():
    spell("alone")

@pytest.mark.xdist_group("x")
def test_x2():
    spell("x2")

@pytest.mark.xdist_group("y")
@pytest.mark.parametrize("i", range(4))
def test_y(i):
    spell(f"y{i}")
"""


def overlap(a: dict, b: dict) -> bool:
    return a["t0"] < b["t1"] and b["t0"] < a["t1"]


def test_an_alone_test_runs_with_nothing_beside_it(pytester: pytest.Pytester,
                                                   monkeypatch) -> None:
    out = pytester.path / "spells.jsonl"
    monkeypatch.setenv("LANES_OUT", str(out))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("PYTEST_ROCM_LLM_START_LEDGER", raising=False)
    pytester.makeconftest(LANES)
    pytester.makepyfile(test_spells=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2",
                                           "--dist", "loadgroup")
    result.assert_outcomes(passed=7)
    spells = [json.loads(line) for line in out.read_text().splitlines()]
    (alone,) = [s for s in spells if s["name"] == "alone"]
    shared = [s for s in spells if s["name"] != "alone"]
    assert not [s for s in shared if overlap(s, alone)], spells
    # ... and the lanes are real: shared tests did run side by side
    assert any(overlap(a, b) for i, a in enumerate(shared) for b in shared[i + 1:]), spells
