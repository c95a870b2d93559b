"""pytest-rocm-llm's hooks, options and fixtures (and nothing else).

Loading this module imports no engine, torch or allure; servers are provisioned lazily by the
first test that asks for one.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from . import settings as settings_mod
from .pool import ConfigProblem, LLMServer, ServerPool, SuiteUnavailable
from .suite_config import Suite, find_suite_file, load_suite
from .targets import HardwareMismatch, Target, check_hardware

SETTINGS_KEY = pytest.StashKey[settings_mod.Settings]()
POOL_KEY = pytest.StashKey[ServerPool]()
SUITE_KEY = pytest.StashKey[Suite]()
RUNS_KEY = pytest.StashKey["WorkloadRuns"]()

if TYPE_CHECKING:
    from .runs import WorkloadRuns
    from .workloads import WorkloadResult


@pytest.hookimpl
def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocm-llm", "LLM serving conformance (pytest-rocm-llm)")
    for opt in settings_mod.OPTIONS:
        dest = opt.flag.lstrip("-").replace("-", "_")
        env = f" [env {opt.env}]" if opt.env else ""
        if opt.is_bool:
            group.addoption(opt.flag, action="store_true", dest=dest, default=None,
                            help=opt.help + env)
        else:
            group.addoption(opt.flag, action="store", dest=dest, default=None,
                            metavar=dest.upper().removeprefix("LLM_"), help=opt.help + env)
        if opt.ini is not None:
            parser.addini(opt.ini, opt.help, type="bool" if opt.is_bool else "string",
                          default=False if opt.is_bool else "")


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "llm_profile(name): the server profile the llm_server fixture launches")
    settings = settings_mod.resolve(config)
    config.stash[SETTINGS_KEY] = settings
    if settings.signatures_file is not None:
        from .signatures import load

        load(settings.signatures_file)  # a broken file is a UsageError now, not mid-run


def _diagnosis(config: pytest.Config, logs: list[Path | None]) -> str:
    """Known failure signatures found in the given server logs, one paragraph each."""
    from .signatures import load, scan_log

    sigs = load(config.stash[SETTINGS_KEY].signatures_file)
    hits = [hit for log in logs for hit in scan_log(log, sigs)]
    return "\n".join(hit.describe() for hit in hits)


def _infrastructure_errors() -> tuple[type[Exception], ...]:
    from .engines import EngineError
    from .prompts import TokenizerUnavailable
    from .reference.provision import ProvisionError
    from .server import ServerError

    return (ServerError, EngineError, ProvisionError, TokenizerUnavailable, OSError)


def _infrastructure_failure(config: pytest.Config, exc: Exception) -> str:
    """The message of a setup/serving failure: never a verdict on speed or accuracy, with
    the log tail, and any known signature in the server's log first."""
    found = _diagnosis(config, [getattr(exc, "log_path", None)])
    lead = f"known failure signature:\n{found}\n" if found else ""
    return f"infrastructure: {lead}{exc}"


def _progress(config: pytest.Config) -> Callable[[str], None]:
    def write(message: str) -> None:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        capman = config.pluginmanager.get_plugin("capturemanager")
        if tr is None:
            print(message, flush=True)
            return
        # Flushed at once: progress must show live even when output is piped (CI logs).
        if capman is not None:
            with capman.global_and_fixture_disabled():
                tr.write_line(message)
                tr.flush()
        else:
            tr.write_line(message)
            tr.flush()

    return write


@pytest.hookimpl
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test asking for ``llm_perf_check`` runs once per check in its suite.toml."""
    if "llm_perf_check" not in metafunc.fixturenames:
        return
    file = find_suite_file(metafunc.definition.path.parent, metafunc.config.rootpath)
    if file is None:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: llm_perf_check needs a "
                                "suite.toml in the test's directory or a parent")
    suite = load_suite(file)
    target = metafunc.config.stash[SETTINGS_KEY].target
    params = []
    for check in suite.checks_for(target):
        w = suite.workload_for(check.workload, target)
        profile = w.profile or suite.default_profile
        params.append(pytest.param(check, id=check.name,
                                    marks=pytest.mark.llm_profile(profile)))
    metafunc.parametrize("llm_perf_check", params)


@pytest.hookimpl
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    cache: dict[Path, Path | None] = {}
    suites: set[str] = set()
    for item in items:
        directory = item.path.parent
        if directory not in cache:
            cache[directory] = find_suite_file(directory, config.rootpath)
        file = cache[directory]
        if file is None:
            continue
        suite = load_suite(file)  # UsageError naming file and key on a bad suite.toml
        item.stash[SUITE_KEY] = suite
        suites.add(suite.name)
        # Keeps a suite's tests on one xdist worker (with --dist loadgroup), so each
        # (suite, profile) server is launched once.
        item.add_marker(pytest.mark.xdist_group(f"suite-{suite.name}"))
    if not suites:
        return
    _group_by_profile(items)
    s = config.stash[SETTINGS_KEY]
    if s.target is None:
        raise pytest.UsageError(
            f"--rocm-target is required to run suites ({', '.join(sorted(suites))}); "
            f"accepted: {', '.join(settings_mod.TARGETS)} (cpu: the embedded CPU reference)")


def _group_by_profile(items: list[pytest.Item]) -> None:
    """Within each run of a suite's tests, order by server profile (stable), so each profile's
    server is launched once even where only one fits on the node at a time."""
    out: list[pytest.Item] = []
    i = 0
    while i < len(items):
        suite = items[i].stash.get(SUITE_KEY, None)
        j = i + 1
        while j < len(items) and items[j].stash.get(SUITE_KEY, None) is suite:
            j += 1
        block = items[i:j]
        if suite is not None:
            rank = {name: n + 1 for n, name in enumerate(suite.profiles)}
            rank[suite.default_profile] = 0

            def key(item: pytest.Item, rank: dict[str, int] = rank) -> int:
                marker = item.get_closest_marker("llm_profile")
                return rank.get(marker.args[0], 0) if marker and marker.args else 0

            block.sort(key=key)
        out.extend(block)
        i = j
    items[:] = out


@pytest.hookimpl
def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    s = config.stash[SETTINGS_KEY]
    if s.target is None or s.endpoint is not None or config.option.collectonly:
        return
    if not any(SUITE_KEY in item.stash for item in session.items):
        return
    try:
        check_hardware(s.target, s.engine_prefix or ())
    except HardwareMismatch as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """A failed check in a suite gets the known failure signatures of its servers' logs
    (e.g. an untuned MoE fallback next to a throughput shortfall)."""
    report = yield
    pool = item.config.stash.get(POOL_KEY, None)
    suite = item.stash.get(SUITE_KEY, None)
    if report.failed and report.when == "call" and pool is not None and suite is not None:
        logs = [s.log_path for s in pool.running if s.suite == suite.name]
        found = _diagnosis(item.config, logs)
        if found:
            report.sections.append(("rocm-llm: known failure signatures in the server log",
                                    found))
    return report


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop a suite's servers right after its last test (they hold GBs of memory)."""
    suite = item.stash.get(SUITE_KEY, None)
    pool = item.config.stash.get(POOL_KEY, None)
    if suite is None or pool is None:
        return
    nxt = nextitem.stash.get(SUITE_KEY, None) if nextitem is not None else None
    if nxt is None or nxt.name != suite.name:
        pool.stop_suite(suite.name)


@pytest.hookimpl
def pytest_sessionfinish(session: pytest.Session) -> None:
    # Also reached on Ctrl-C and internal errors, where fixture teardown may not run.
    pool = session.config.stash.get(POOL_KEY, None)
    if pool is not None:
        pool.stop_all()


@pytest.hookimpl
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    runs = config.stash.get(RUNS_KEY, None)
    if runs is None or not runs.results:
        return
    from .runs import summarize

    terminalreporter.section("rocm-llm workloads")
    target = config.stash[SETTINGS_KEY].target
    terminalreporter.write_line(f"target {target.name if target else '-'}; output speed = "
                                "(completion_tokens - 1) / (e2e - TTFT)")
    for (suite, name), result in runs.results.items():
        terminalreporter.write_line(f"{suite}/{name} [{result.workload.kind}]: "
                                    f"{summarize(result)}")


@pytest.hookimpl
def pytest_unconfigure(config: pytest.Config) -> None:
    pool = config.stash.get(POOL_KEY, None)
    if pool is not None:
        pool.stop_all()


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def llm_settings(pytestconfig: pytest.Config) -> settings_mod.Settings:
    """The run's resolved settings (command line > ini > environment > default)."""
    return pytestconfig.stash[SETTINGS_KEY]


@pytest.fixture(scope="session")
def llm_target(llm_settings: settings_mod.Settings) -> Target:
    if llm_settings.target is None:
        pytest.skip("no --rocm-target given")
    return llm_settings.target


@pytest.fixture(scope="session")
def llm_pool(pytestconfig: pytest.Config, llm_settings: settings_mod.Settings,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerPool]:
    """The run's servers, one per (suite, profile)."""
    log_dir = llm_settings.log_dir or tmp_path_factory.getbasetemp() / "llm-servers"
    hook = pytestconfig.hook
    pool = ServerPool(
        llm_settings, log_dir, _progress(pytestconfig),
        on_ready=lambda srv: hook.pytest_rocm_llm_server_ready(config=pytestconfig, server=srv),
        on_stop=lambda srv, code: hook.pytest_rocm_llm_server_stopped(
            config=pytestconfig, server=srv, exit_code=code),
    )
    pytestconfig.stash[POOL_KEY] = pool
    atexit.register(pool.stop_all)  # last resort if pytest itself is torn down abruptly
    yield pool
    pool.stop_all()
    atexit.unregister(pool.stop_all)


@pytest.fixture
def llm_suite(request: pytest.FixtureRequest) -> Suite:
    """The suite (suite.toml) the requesting test belongs to."""
    suite = request.node.stash.get(SUITE_KEY, None)
    if suite is None:
        raise pytest.UsageError(
            f"{request.node.nodeid}: llm fixtures need a suite.toml in the test's directory "
            "or a parent directory")
    return suite


@pytest.fixture
def llm_servers(llm_pool: ServerPool, llm_suite: Suite, llm_target: Target,
                pytestconfig: pytest.Config) -> Callable[[str | None], LLMServer]:
    """Factory: ``llm_servers("spec")`` gives the suite's server for that profile."""

    def get(profile: str | None = None) -> LLMServer:
        name = profile or llm_suite.default_profile
        try:
            return llm_pool.get(llm_suite, name)
        except SuiteUnavailable as exc:
            skip_reason, failure = str(exc), None
        except ConfigProblem as exc:
            skip_reason, failure = None, str(exc)
        except _infrastructure_errors() as exc:
            skip_reason, failure = None, _infrastructure_failure(pytestconfig, exc)
        if skip_reason is not None:
            pytest.skip(skip_reason)
        pytest.fail(failure, pytrace=False)

    return get


@pytest.fixture
def llm_server(request: pytest.FixtureRequest,
               llm_servers: Callable[[str | None], LLMServer]) -> LLMServer:
    """The suite's server for the profile in ``@pytest.mark.llm_profile`` (or the default)."""
    marker = request.node.get_closest_marker("llm_profile")
    return llm_servers(marker.args[0] if marker else None)


@pytest.fixture
def llm_client(llm_server: LLMServer) -> Iterator[object]:
    """A synchronous client for ``llm_server``'s native API."""
    from .client import LLMClient

    with LLMClient(llm_server) as client:
        yield client


@pytest.fixture(scope="session")
def llm_runs(pytestconfig: pytest.Config, llm_target: Target,
             tmp_path_factory: pytest.TempPathFactory) -> WorkloadRuns:
    """Each declared workload's result, run once per session and shared by its checks."""
    from .runs import WorkloadRuns

    runs = WorkloadRuns(llm_target, tmp_path_factory.getbasetemp() / "llm-workloads",
                        _progress(pytestconfig))
    pytestconfig.stash[RUNS_KEY] = runs
    return runs


@pytest.fixture
def llm_workload(request: pytest.FixtureRequest, llm_suite: Suite, llm_target: Target,
                 llm_servers: Callable[[str | None], LLMServer],
                 llm_runs: WorkloadRuns) -> Callable[[str], WorkloadResult]:
    """Factory: ``llm_workload("decode")`` runs (once) and returns that workload's result."""

    def run(name: str) -> WorkloadResult:
        if name not in llm_suite.workloads:
            raise pytest.UsageError(f"{llm_suite.file}: no workload {name!r} "
                                    f"(workloads: {', '.join(llm_suite.workloads)})")
        w = llm_suite.workload_for(name, llm_target)
        server = llm_servers(w.profile)
        try:
            result = llm_runs.get(llm_suite.name, w, server)
        except _infrastructure_errors() as exc:
            failure = _infrastructure_failure(request.config, exc)
        else:
            request.node.user_properties.append(
                ("llm_metrics", {"workload": name, "profile": server.profile,
                                 **result.metrics}))
            return result
        pytest.fail(failure, pytrace=False)

    return run
