from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpcore  # noqa: F401
import httpx  # noqa: F401
import pytest
from hypothesis import settings

# In-process pytester runs drop from sys.modules whatever they imported first; httpx then
# keeps exception maps that point at a dropped httpcore, and connection errors escape
# unmapped. Importing the HTTP stack and the plugin's modules here keeps them loaded once.
import pytest_rocm_llm.client.generate  # noqa: E402,F401
import pytest_rocm_llm.performance.runs  # noqa: E402,F401
import pytest_rocm_llm.serving.process  # noqa: E402,F401

# The machines are shared and noisy: no per-example deadline; in CI, a fixed example
# sequence so a red run is reproducible.
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ROOT = Path(__file__).resolve().parent.parent
# Resolved at import, before pytester points HOME at a temporary directory: pytester runs
# must share the machine's reference cache instead of provisioning their own.
REFERENCE_CACHE = str(
    Path(os.environ.get("PYTEST_ROCM_LLM_CACHE") or "~/.cache/pytest-rocm-llm").expanduser())

SMOKE_MODEL = """
[model]
id = "HuggingFaceTB/SmolLM2-135M-Instruct"
served_name = "smollm2-135m-instruct"
reference = "smollm2-135m-instruct"
"""


def suite_head(name: str, profiles: dict[str, dict[str, object]], **suite: object) -> str:
    """The start of a suite.toml on the smoke model: its [suite] table (``name``, then the
    ``suite`` keys in the order given), the [model] table, and one [profiles.*] table per entry
    of ``profiles`` with its engine flags inline (no flags: a bare table). What the caller
    adds either starts with a blank line and its next table or goes on with the last
    profile's table (its env)."""
    # JSON's strings, numbers, booleans and arrays are written as TOML writes them.
    keys = "".join(f"{key} = {json.dumps(v)}\n" for key, v in suite.items())
    tables = ""
    for profile, flags in profiles.items():
        tables += f"[profiles.{profile}]\n"
        if flags:
            inline = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in flags.items())
            tables += f"flags = {{ {inline} }}\n"
    return f"\n[suite]\nname = {json.dumps(name)}\n{keys}{SMOKE_MODEL}\n{tables}"


@pytest.fixture
def suite_dir(pytester: pytest.Pytester):
    """Write a suite (suite.toml + test modules) into pytester's directory."""

    def make(toml: str, tests: dict[str, str] | None = None, name: str = "demo") -> Path:
        d = pytester.path / "suites" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "suite.toml").write_text(toml)
        for fname, body in (tests or {}).items():
            (d / fname).write_text(body)
        return d

    return make


@pytest.fixture
def engine_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment for pytester runs that launch the real CPU reference: the shared cache
    (so the engine environment and model are built once per machine)."""
    env = {"PYTEST_ROCM_LLM_CACHE": REFERENCE_CACHE}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A stand-in container runtime's executable (tests/stand_ins/container_runtime.py). Run by
    this interpreter without site (a PATH lookup of python3 may go through a slow shim): the
    runtime is one executable, as docker is."""
    exe = tmp_path / "runtime"
    stand_in = ROOT / "tests" / "stand_ins" / "container_runtime.py"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -S {stand_in} "$@"\n')
    exe.chmod(0o755)
    monkeypatch.setenv("FAKE_RUNTIME_STATE", str(tmp_path / "state.json"))
    return str(exe)


@pytest.fixture(scope="session")
def reference_model_dir() -> Path:
    """The CPU reference model directory, built once per machine if missing."""
    from pytest_rocm_llm.serving.reference.provision import ensure_reference

    return ensure_reference(Path(REFERENCE_CACHE), "smollm2-135m-instruct").model_dir


@pytest.fixture(scope="session")
def reference_vocab(reference_model_dir: Path):
    from pytest_rocm_llm.performance.prompts import load_vocabulary

    return load_vocabulary(str(reference_model_dir))


def reference_launch_spec(name: str, model_dir: Path, port: int, log_path: Path):
    """The CPU target's sglang launch of the reference model on loopback ``port``."""
    from pytest_rocm_llm.config.targets import TARGETS
    from pytest_rocm_llm.serving.engines import get_engine
    from pytest_rocm_llm.serving.process import LaunchSpec
    from pytest_rocm_llm.serving.reference.provision import STUBS, ensure_engine

    python = ensure_engine(Path(REFERENCE_CACHE))
    target = TARGETS["cpu"]
    engine = get_engine("sglang")
    argv = engine.launch_argv((str(python),), str(model_dir), "smollm2-135m-instruct",
                              "127.0.0.1", port, dict(target.engine_flags["sglang"]))
    return LaunchSpec(
        name=name, argv=tuple(argv), env={**target.env, "PYTHONPATH": str(STUBS)},
        host="127.0.0.1", port=port, health_path=engine.health_path, log_path=log_path,
        start_timeout_s=900)


@pytest.fixture(scope="session")
def cpu_server(reference_model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """The session's one real CPU sglang server (the cpu target's reference launch), for
    tests that need a live server but not their own: pytester runs attach to it with
    --llm-endpoint, so each costs its requests, not a server start. Stopped at the end of the
    session; its guardian reaps it if pytest dies first (SIGKILL, a crash). A test that kills,
    stops, hangs or times its server keeps its own."""
    from pytest_rocm_llm.serving.ports import claim_port, release_port
    from pytest_rocm_llm.serving.process import ServerProcess

    port = claim_port("127.0.0.1")
    spec = reference_launch_spec("tests/cpu_server", reference_model_dir, port,
                                 tmp_path_factory.mktemp("cpu_server") / "server.log")
    try:
        with ServerProcess(spec) as proc:
            yield proc.base_url
    finally:
        release_port(port)


@pytest.fixture(scope="session")
def report_run(tmp_path_factory: pytest.TempPathFactory, reference_model_dir: Path):
    """One real suite run with its own server (tests/report_run.py), shared by the Allure
    report's tests and the planted-secret tests: (root, completed process)."""
    from tests.report_run import run

    root = tmp_path_factory.mktemp("report-run")
    return root, run(root)


# ---- The engine-start account and budget (issue 20) ----------------------------------------
# Server starts are most of this suite's time. Every ServerProcess start in this session, in
# pytester subprocesses and xdist workers too, lands in one ledger (serving/start_ledger.py);
# the end of the run prints who started what and for how long it loaded, and fails the run
# when it started more engine servers than tests/engine_budget.toml allows: a new test that
# launches its own servers is then a visible decision, not a silent cost.
ENGINE_BUDGET = ROOT / "tests" / "engine_budget.toml"


@pytest.hookimpl(trylast=True)  # after tmp_path's own configure made the basetemp factory
def pytest_configure(config: pytest.Config) -> None:
    from pytest_rocm_llm.serving.start_ledger import LEDGER_ENV, lines_in

    config.addinivalue_line("markers", f"{ALONE}: measures speed, so runs with no other test "
                            "running (the other xdist worker waits)")
    if hasattr(config, "workerinput"):
        return  # an xdist worker: it writes to the controller's ledger
    if os.environ.get(LEDGER_ENV):  # an outer run (.ci/run) keeps one for all its phases
        ledger = Path(os.environ[LEDGER_ENV])
    else:
        ledger = Path(config._tmp_path_factory.getbasetemp()) / "engine-starts.jsonl"  # type: ignore[attr-defined]  # noqa: E501
        ledger.unlink(missing_ok=True)
        os.environ[LEDGER_ENV] = str(ledger)
    config.stash[_LEDGER] = (ledger, lines_in(ledger))


_LEDGER = pytest.StashKey[tuple[Path, int]]()


def _this_run(config: pytest.Config) -> list | None:
    from pytest_rocm_llm.serving.start_ledger import read

    kept = config.stash.get(_LEDGER, None)
    return None if kept is None else read(*kept)


# ---- Two lanes on two cores (pytest-xdist, --dist loadgroup) ------------------------------
# Most of an engine test is a server start: imports in one process at a time, about one core.
# So two workers run the suite, each engine module a group kept on one worker (its module-
# scoped run is shared by its tests), every user of the shared cpu_server on the same worker
# (one session server, not one per worker); fast tests fill in. A test that measures speed
# (@pytest.mark.alone) runs with nothing else running: a readers-writer lock across the
# workers, with a turnstile so a waiting measurement is not starved by the other lane.
ALONE = "alone"
LANES = 2


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which turns -n into workers
def pytest_cmdline_main(config: pytest.Config) -> None:
    """``pytest`` on the tests runs as if ``-n 2 --dist loadgroup`` were given, unless -n was
    (``-n 0``: one process) or xdist is off. Here rather than in addopts, which would apply
    to suite runs (``pytest --rocm-target cpu suites/smoke``) too: this conftest is loaded
    before the command line is acted on only when the tests are what pytest runs."""
    # Off by default: measured in a clean-clone CI run, two lanes made every server start
    # 2-3x slower (38 starts loading 2,950 s) and quickstart 2 took 3,272 s; opt in with
    # PYTEST_ROCM_LLM_TEST_LANES=1 (or -n 2 --dist loadgroup) to measure again.
    if (os.environ.get("PYTEST_ROCM_LLM_TEST_LANES") == "1"
            and config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput")
            and config.option.numprocesses is None and config.option.dist == "no"):
        config.option.numprocesses = LANES
        config.option.dist = "loadgroup"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("engine") is None:
            continue
        names = getattr(item, "fixturenames", ())
        # a session-scoped server or run is one group, so its users share one worker's copy
        shared = next((f for f in ("cpu_server", "report_run") if f in names), None)
        group = shared or item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


def _share_of_the_machine(item: pytest.Item):
    """A context holding this worker's share: exclusive for @alone tests, shared for the
    rest; nothing outside xdist."""
    import contextlib
    import fcntl

    config = item.config
    if not hasattr(config, "workerinput"):
        return contextlib.nullcontext()
    root = Path(config._tmp_path_factory.getbasetemp()).parent  # type: ignore[attr-defined]
    alone = item.get_closest_marker(ALONE) is not None

    @contextlib.contextmanager
    def held():
        with open(root / "lanes.turnstile", "a") as gate, open(root / "lanes.lock", "a") as lk:
            fcntl.flock(gate, fcntl.LOCK_EX)
            if not alone:
                fcntl.flock(gate, fcntl.LOCK_UN)
            fcntl.flock(lk, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(lk, fcntl.LOCK_UN)
                fcntl.flock(gate, fcntl.LOCK_UN)

    return held()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Starts are put to the test being run, its module- and session-scoped fixtures' too
    (set up inside its protocol, before any function-scoped fixture could say so); the test
    runs holding its share of the machine."""
    from pytest_rocm_llm.serving.start_ledger import CONTEXT_ENV

    before = os.environ.get(CONTEXT_ENV)
    os.environ[CONTEXT_ENV] = item.nodeid
    try:
        with _share_of_the_machine(item):
            return (yield)
    finally:
        if before is None:
            os.environ.pop(CONTEXT_ENV, None)
        else:
            os.environ[CONTEXT_ENV] = before


def _budget() -> int:
    import tomllib

    return int(tomllib.loads(ENGINE_BUDGET.read_text())["max_engine_starts"])


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    from pytest_rocm_llm.serving.start_ledger import account, engine_starts

    starts = _this_run(config)
    if starts is None:
        return
    terminalreporter.section("engine server starts (tests/engine_budget.toml)")
    for line in account(starts):
        terminalreporter.write_line(line)
    count, budget = len(engine_starts(starts)), _budget()
    terminalreporter.write_line(f"engine starts: {count} of a budget of {budget}")
    if count > budget:
        terminalreporter.write_line(
            f"FAILED: {count} engine server starts exceed the budget of {budget} in "
            f"{ENGINE_BUDGET}: share the session's server (the cpu_server fixture) or raise "
            "the budget there, saying which test needs its own and why", red=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from pytest_rocm_llm.serving.start_ledger import engine_starts

    starts = _this_run(session.config)
    if starts is not None and len(engine_starts(starts)) > _budget() and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
