"""How the pool schedules servers: tests grouped by profile, at most max_servers running."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rocm_llm.config.builds import CANDIDATE, Build
from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.serving.pool import ServerPool
from pytest_rocm_llm.serving.server import LLMServer
from tests.conftest import SMOKE_MODEL

THREE = f"""
[suite]
name = "demo"
default_profile = "reference"
{SMOKE_MODEL}
[profiles.spec]
[profiles.reference]
[profiles.throughput]
"""


def test_tests_are_grouped_by_profile_default_first(pytester: pytest.Pytester,
                                                   suite_dir) -> None:
    suite_dir(THREE, {"test_x.py": """
import pytest
@pytest.mark.llm_profile("throughput")
def test_1(llm_server): pass
@pytest.mark.llm_profile("spec")
def test_2(llm_server): pass
def test_3(llm_server): pass
@pytest.mark.llm_profile("throughput")
def test_4(llm_server): pass
@pytest.mark.llm_profile("spec")
def test_5(llm_server): pass
"""})
    result = pytester.runpytest("--rocm-target", "cpu", "--collect-only", "-q")
    names = [line.rsplit("::", 1)[1] for line in result.stdout.lines if "::" in line]
    assert names == ["test_3", "test_2", "test_5", "test_1", "test_4"]


class FakeProcess:
    """Stands in for a launched server process: the policy is what is under test here."""

    pid = None  # nothing to park: the pool stops it instead

    def __init__(self) -> None:
        self.stopped = False

    def stop(self) -> int:
        self.stopped = True
        return 0

    def check_alive(self) -> None:
        pass


def fake_launches(pool: ServerPool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool, "_prepare_suite", lambda s, engine, build: None)
    # no server answers /server_info here: the launch policy is what is under test
    monkeypatch.setattr(pool, "_verify_effective", lambda s, p, srv: None)
    monkeypatch.setattr(pool, "_launch", lambda s, p, st, build: LLMServer(
        s.name, p, "http://x", "sglang", "m", "/m", (), {}, "0", FakeProcess(), None,
        build.name))


@pytest.mark.parametrize("target", ["mi355x", "cpu"])
def test_one_builds_servers_at_a_time_and_restarts_are_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str) -> None:
    """A paired run alternates builds: the other build's server stops before one starts, on
    the CPU reference too (room for two servers, but two would share the measured cores)."""
    import dataclasses
    import tomllib

    suite = parse_suite(tmp_path / "suite.toml", tomllib.loads(THREE))
    settings = dataclasses.replace(
        Settings(TARGETS[target], None, None, None, 60.0, False, None, "127.0.0.1", tmp_path),
        candidate=Build(CANDIDATE, None, {"OMP_NUM_THREADS": "1"}))
    messages: list[str] = []
    pool = ServerPool(settings, tmp_path, messages.append)
    fake_launches(pool, monkeypatch)
    baseline, candidate = settings.builds
    a = pool.get(suite, "reference", baseline)
    b = pool.get(suite, "reference", candidate)
    assert a.process.stopped and not b.process.stopped  # type: ignore[union-attr]
    assert [s.name for s in pool.running] == ["demo/reference@candidate"]
    assert messages[0] == ("[rocm-llm] demo/reference: stopping before "
                           "demo/reference@candidate starts (one build's servers at a time)")
    assert pool.get(suite, "reference", candidate) is b  # reused, not restarted
    assert pool.serving_build("demo") == "candidate"
    assert pool.restarts == 0
    pool.get(suite, "reference", baseline)
    assert pool.restarts == 1
    assert [s.name for s in pool.running] == ["demo/reference"]


@pytest.mark.parametrize(("target", "expected_running"), [("mi355x", 1), ("cpu", 2)])
def test_pool_runs_at_most_max_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       target: str, expected_running: int) -> None:
    import tomllib

    suite = parse_suite(tmp_path / "suite.toml", tomllib.loads(THREE))
    settings = Settings(TARGETS[target], None, None, None, 60.0, False, None, "127.0.0.1",
                        tmp_path)
    messages: list[str] = []
    pool = ServerPool(settings, tmp_path, messages.append)
    fake_launches(pool, monkeypatch)
    launched = [pool.get(suite, p) for p in ("reference", "spec", "throughput")]
    assert len(pool.running) == expected_running
    assert [s.process.stopped for s in launched] == (
        [True, True, False] if expected_running == 1 else [True, False, False])
    assert "demo/reference: stopping to make room for demo/spec" in messages[0] or (
        expected_running == 2 and "demo/reference: stopping to make room for demo/throughput"
        in messages[0])


def test_xdist_loadgroup_keeps_each_suite_on_one_worker(pytester: pytest.Pytester) -> None:
    """pytest-xdist 3.8 + pytest 9 drop xdist_group tags; the plugin's tags keep a suite's
    tests (hence its servers) on one worker."""
    for name in ("a", "b"):
        d = pytester.path / "suites" / name
        d.mkdir(parents=True)
        (d / "suite.toml").write_text(f'[suite]\nname = "{name}"\n[model]\nid = "m"\n'
                                      "[profiles.p]\n")
        (d / f"test_{name}.py").write_text(
            "import os, pytest\n@pytest.mark.parametrize('i', range(4))\n"
            f"def test_{name}(i):\n"
            f"    open('{name}.' + os.environ['PYTEST_XDIST_WORKER'], 'w').close()\n")
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "--rocm-target",
                                           "cpu", "-p", "no:cacheprovider", "suites")
    result.assert_outcomes(passed=8)
    for name in ("a", "b"):
        assert len(list(pytester.path.glob(f"{name}.gw*"))) == 1


def test_each_server_stops_after_the_last_test_that_needs_it(pytester: pytest.Pytester,
                                                             suite_dir) -> None:
    from pytest_rocm_llm.plugin.state import STOP_AFTER_KEY

    suite_dir(THREE, {"test_x.py": """
import pytest
def test_r(llm_server): pass
def test_plain(): pass
@pytest.mark.llm_profile("spec", "reference")
def test_s(llm_servers): pass
@pytest.mark.llm_profile("throughput")
def test_t(llm_server): pass
"""})
    items, _ = pytester.inline_genitems("--rocm-target", "cpu")
    stops = {item.name: sorted(item.stash.get(STOP_AFTER_KEY, [])) for item in items}
    assert [item.name for item in items] == ["test_r", "test_plain", "test_s", "test_t"]
    # reference is still needed by test_s (its second profile), so it outlives test_r
    assert stops == {"test_r": [], "test_plain": [],
                     "test_s": [("demo", "reference"), ("demo", "spec")],
                     "test_t": [("demo", "throughput")]}


def test_a_parked_server_takes_no_cpu_until_continued() -> None:
    """Parking (serving/parking.py) on a real process group: stopped, then running again."""
    import subprocess
    import sys
    import time

    from pytest_rocm_llm.serving.parking import park, resume

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"], process_group=0)

    class Proc:
        pid = busy.pid
        guardian = None

    def state() -> str:
        return Path(f"/proc/{busy.pid}/stat").read_text().split(") ", 1)[1][0]

    try:
        assert park(Proc())  # type: ignore[arg-type]
        time.sleep(0.2)
        assert state() == "T"
        cpu = Path(f"/proc/{busy.pid}/stat").read_text().split(") ", 1)[1].split()[11]
        time.sleep(0.5)
        assert Path(f"/proc/{busy.pid}/stat").read_text().split(") ", 1)[1].split()[11] == cpu
        resume(Proc())  # type: ignore[arg-type]
        time.sleep(0.2)
        assert state() in "RS"
    finally:
        busy.kill()
        busy.wait()
