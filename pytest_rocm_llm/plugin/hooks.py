"""pytest-rocm-llm's hooks and options (its fixtures are in fixtures.py, registered here).

Loading this module imports no engine, torch or allure; servers are provisioned lazily by the
first test that asks for one.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_rocm_llm.config import settings as settings_mod
from pytest_rocm_llm.config.suite import find_suite_file, load_suite
from pytest_rocm_llm.config.suite_model import Suite
from pytest_rocm_llm.config.targets import HardwareMismatch, check_hardware
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.plugin.collection import group_by_profile, last_uses
from pytest_rocm_llm.plugin.progress import progress_writer
from pytest_rocm_llm.plugin.state import (
    SESSION_KEY,
    STOP_AFTER_KEY,
    SUITE_KEY,
    RunSession,
    run_session,
    usage_errors,
)
from pytest_rocm_llm.report.collector import (
    BUILDS_PROPERTY,
    PAIRED_PROPERTY,
    VERDICT_PROPERTY,
    WORKEROUTPUT_KEY,
    paired_from_json,
)
from pytest_rocm_llm.serving.diagnosis import diagnosis
from pytest_rocm_llm.verdicts.baselines import BaselineCache

if TYPE_CHECKING:
    from pytest_rocm_llm.report.plan_status import Blocker
    from pytest_rocm_llm.report.run_report import RunReport


@pytest.hookimpl
def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_rocm_llm.plugin import hookspecs

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
        elif opt.repeat:
            group.addoption(opt.flag, action="append", dest=dest, default=None,
                            metavar=dest.upper().removeprefix("LLM_"), help=opt.help + env)
        else:
            group.addoption(opt.flag, action="store", dest=dest, default=None,
                            metavar=dest.upper().removeprefix("LLM_"), help=opt.help + env)
        if opt.ini is not None:
            parser.addini(opt.ini, opt.help, type="bool" if opt.is_bool else "string",
                          default=False if opt.is_bool else "")


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "llm_profile(name, *also): the server profile the llm_server fixture launches, "
        "then any other profile the test asks llm_servers for (kept running until then)")
    with warnings.catch_warnings(record=True) as deprecated, usage_errors():
        warnings.simplefilter("always", DeprecationWarning)
        settings = settings_mod.resolve(config)
    for w in deprecated:  # old environment variable names: shown in the warnings summary
        config.issue_config_time_warning(w.message, stacklevel=2)
    config.stash[SESSION_KEY] = RunSession(settings, BaselineCache(settings.baselines_dir))
    if settings.signatures_file is not None:
        from pytest_rocm_llm.serving.signatures import load

        with usage_errors():  # a broken file stops the run now, not mid-run
            load(settings.signatures_file)
    from pytest_rocm_llm.plugin import fixtures

    config.pluginmanager.register(fixtures, "rocm_llm_fixtures")
    # Progress records of the domain modules (stdlib logging), shown live in the terminal
    # (registered as a module, once: `-p pytest_rocm_llm.plugin.progress` may have done it).
    from pytest_rocm_llm.plugin import progress

    if not config.pluginmanager.is_registered(progress):
        config.pluginmanager.register(progress, "rocm_llm_progress")
    config.pluginmanager.register(_VerdictRecorder(config), "rocm_llm_verdicts")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistController(config), "rocm_llm_xdist")


class _VerdictRecorder:
    """Verdict rows, from this process's tests or (under xdist) from the workers' reports
    (a report does not carry its config, hence an object bound to it)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # A setup that did not pass is the test's last report with rows (no call follows).
        if report.when != "call" and not (report.when == "setup" and not report.passed):
            return
        from pytest_rocm_llm.verdicts.verdict import Verdict

        collector = run_session(self.config).collector
        for name, value in report.user_properties:
            if name == VERDICT_PROPERTY:
                collector.verdicts.append(Verdict.from_json(value))
            elif name == PAIRED_PROPERTY:
                collector.paired.append(paired_from_json(value))
            elif name == BUILDS_PROPERTY:
                collector.builds.update(value)


class _XdistController:
    """Registered only with pytest-xdist present (its hooks are unknown otherwise)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl
    def pytest_testnodedown(self, node: object, error: object) -> None:
        out = getattr(node, "workeroutput", None) or {}
        if WORKEROUTPUT_KEY in out:
            run_session(self.config).collector.merge_workeroutput(out[WORKEROUTPUT_KEY])


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test asking for ``llm_check`` runs once per check in its suite.toml."""
    if "llm_check" not in metafunc.fixturenames:
        return
    file = find_suite_file(metafunc.definition.path.parent, metafunc.config.rootpath)
    if file is None:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: llm_check needs a "
                                "suite.toml in the test's directory or a parent")
    try:
        suite = load_suite(file)
    except ConfigError:
        return  # pytest_collection_modifyitems reports it, as one line, not a traceback
    target = run_session(metafunc.config).settings.target
    params = []
    for check in suite.checks_for(target):
        profile = suite.check_profile(check, target)
        params.append(pytest.param(check, id=check.name,
                                    marks=pytest.mark.llm_profile(profile)))
    metafunc.parametrize("llm_check", params)


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
        with usage_errors():  # naming file and key on a bad suite.toml
            suite = load_suite(file)
        item.stash[SUITE_KEY] = suite
        suites.add(suite.name)
        # Keeps a suite's tests on one xdist worker (with --dist loadgroup), so each
        # (suite, profile) server is launched once.
        item.add_marker(pytest.mark.xdist_group(f"suite-{suite.name}"))
    if not suites:
        return
    group_by_profile(items, lambda item: item.stash.get(SUITE_KEY, None))
    if getattr(config.option, "loadgroup", False):
        from pytest_rocm_llm.plugin.collection import tag_xdist_groups

        tag_xdist_groups(items, lambda item: item.stash.get(SUITE_KEY, None))
    s = run_session(config).settings
    if s.target is None:
        raise pytest.UsageError(
            f"--rocm-target is required to run suites ({', '.join(sorted(suites))}); "
            f"accepted: {', '.join(settings_mod.TARGETS)} (cpu: the embedded CPU reference)")


@pytest.hookimpl
def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    s = run_session(config).settings
    if s.plan and s.target is not None:
        from pytest_rocm_llm.report.plan import print_plans

        suites = {id(x): x for item in session.items if (x := item.stash.get(SUITE_KEY, None))}
        tr = config.pluginmanager.get_plugin("terminalreporter")
        blockers = print_plans(list(suites.values()), s.target, s, tr, progress_writer(config),
                               run_session(config).baselines)
        blockers += _plan_preflight(config, session.items, s)
        from pytest_rocm_llm.report.plan_status import plan_status, status_lines

        for line in status_lines(blockers):
            tr.write_line(line, red=bool(blockers), green=not blockers)
        run_session(config).plan_status = int(plan_status(blockers))
        config.hook.pytest_deselected(items=list(session.items))
        session.items.clear()
        return
    if s.target is None or not any(SUITE_KEY in item.stash for item in session.items):
        return
    # Computed on the final item list (after every plugin's reordering and deselection).
    stops = last_uses(session.items, lambda item: item.stash.get(SUITE_KEY, None), s.target)
    for item in session.items:
        if item.nodeid in stops:
            item.stash[STOP_AFTER_KEY] = stops[item.nodeid]
    if config.option.collectonly:
        return
    try:
        _before_launch(config, session.items, s)
    except pytest.UsageError as exc:
        if not _is_worker(config):
            raise
        # An xdist worker's usage error reaches the controller as a bare crash: the worker
        # stops its session with the message instead (its first test fails with it before
        # any fixture runs; the controller reports "Interrupted: <message>").
        run_session(config).stop_run = session.shouldstop = str(exc)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    stop_run = run_session(item.config).stop_run
    if stop_run is not None:
        pytest.fail(stop_run, pytrace=False)


def _suites_and_checks(items: list[pytest.Item]) -> tuple[list[Suite], list[tuple[Suite, Any]]]:
    suites = {x.name: x for item in items if (x := item.stash.get(SUITE_KEY, None))}
    checks = [(item.stash[SUITE_KEY], item.callspec.params["llm_check"]) for item in items
              if SUITE_KEY in item.stash and "llm_check" in getattr(
                  getattr(item, "callspec", None), "params", {})]
    return list(suites.values()), checks


def _plan_preflight(config: pytest.Config, items: list[pytest.Item],
                    s: settings_mod.Settings) -> list[Blocker]:
    """The run's own pre-launch checks, reported as a plan blocker instead of stopping."""
    from pytest_rocm_llm.plugin.preflight import preflight
    from pytest_rocm_llm.report.plan_status import Blocker, PlanStatus

    assert s.target is not None
    suites, checks = _suites_and_checks(items)
    try:
        preflight(suites, checks, s.target, s, run_session(config).baselines)
    except ConfigError as exc:
        return [Blocker(PlanStatus.PREFLIGHT, str(exc).replace("\n", "\n      "))]
    return []


def _before_launch(config: pytest.Config, items: list[pytest.Item],
                   s: settings_mod.Settings) -> None:
    """Baselines, data and tools (see preflight.preflight), then the node's hardware, then
    the CPU reference's missing environments (_build_reference)."""
    from pytest_rocm_llm.plugin.preflight import preflight

    assert s.target is not None
    suites, checks = _suites_and_checks(items)
    with usage_errors():
        notices = preflight(suites, checks, s.target, s, run_session(config).baselines)
    for line in notices:
        progress_writer(config)(line)
    if s.endpoint is not None:
        return
    from pytest_rocm_llm.serving.container import exec_part, reap_dead_runs

    if s.container_runtime is not None:
        for name in reap_dead_runs(s.container_runtime):
            progress_writer(config)(f"[rocm-llm] removed container {name}, left by an earlier "
                                    "run whose pytest died")
    try:
        check_hardware(s.target, exec_part(s, s.target, s.incumbent))
    except HardwareMismatch as exc:
        raise pytest.UsageError(str(exc)) from None
    _build_reference(config, suites, s)


def _build_reference(config: pytest.Config, suites: list[Suite],
                     s: settings_mod.Settings) -> None:
    """When the run needs two or more CPU reference environments that are not built yet,
    they are built now, side by side (and the reference model converted as soon as sglang's
    is ready), instead of one after the other by the first test that needs each. One missing
    environment is left to that test. A failure is left to it too: it is retried there and
    reported as that test's infrastructure error, with the build log's tail."""
    from pytest_rocm_llm.plugin.preflight import reference_builds
    from pytest_rocm_llm.serving.reference.provision import (
        ProvisionError,
        ensure_engines,
        unbuilt,
    )

    assert s.target is not None
    engines, models = reference_builds(suites, s.target, s)
    todo = unbuilt(s.cache_dir, engines)
    if len(todo) < 2:
        return
    progress = progress_writer(config)
    try:
        with run_session(config).collector.phases.measure(
                "provision", f"{' and '.join(todo)} environments, side by side"):
            ensure_engines(s.cache_dir, todo, models, progress)
    except (ProvisionError, OSError) as exc:
        progress(f"[rocm-llm] reference: building side by side failed; the first test that "
                 f"needs it retries and reports it: {str(exc).splitlines()[0]}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """A failed check in a suite gets the known failure signatures of its servers' logs
    (e.g. an untuned MoE fallback next to a throughput shortfall); a check that never got
    to a verdict gets a not-judged row."""
    report = yield
    pool = run_session(item.config).pool
    suite = item.stash.get(SUITE_KEY, None)
    target = run_session(item.config).settings.target
    if suite is not None and target is not None:
        from pytest_rocm_llm.plugin.judging import record_unjudged

        record_unjudged(item, report, call.excinfo, suite, target)
    if report.failed and report.when == "call" and pool is not None and suite is not None:
        logs = [s.log_path for s in pool.running if s.suite == suite.name]
        found = diagnosis(run_session(item.config).settings.signatures_file, logs)
        if found:
            report.sections.append(("rocm-llm: known failure signatures in the server log",
                                    found))
    return report


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop each server right after the last test that needs it, and a suite's servers after
    its last test (they hold GBs of memory, and on the CPU reference an idle server still
    competes with the one being measured)."""
    suite = item.stash.get(SUITE_KEY, None)
    pool = run_session(item.config).pool
    if suite is None or pool is None:
        return
    for suite_name, profile in item.stash.get(STOP_AFTER_KEY, ()):
        pool.stop_profile(suite_name, profile)
    nxt = nextitem.stash.get(SUITE_KEY, None) if nextitem is not None else None
    if nxt is None or nxt.name != suite.name:
        pool.stop_suite(suite.name)


@pytest.hookimpl
def pytest_sessionfinish(session: pytest.Session) -> None:
    # Also reached on Ctrl-C and internal errors, where fixture teardown may not run.
    config = session.config
    run = run_session(config)
    if run.plan_status is not None:  # --llm-plan: whether the run can go ahead
        # pytest's own failures (a test module that does not import: interrupted) stand.
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = run.plan_status
        return
    if run.pool is not None:
        run.pool.stop_all()
    collector = run.collector
    if _is_worker(config):
        config.workeroutput[WORKEROUTPUT_KEY] = collector.to_workeroutput()  # type: ignore
        return
    collector.flush()  # only the controller writes baselines
    from pytest_rocm_llm.plugin.outputs import write_outputs
    from pytest_rocm_llm.verdicts.verdict import unjudged_failure

    s = run.settings
    failure = s.target and unjudged_failure(s.target, collector.verdicts, s.allow_unjudged)
    if failure and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    run.report = _report_so_far(config, run).with_outcome(int(session.exitstatus),
                                                          failure or None)
    write_outputs(config, s, run.report)


def _report_so_far(config: pytest.Config, run: RunSession) -> RunReport:
    from pytest_rocm_llm.report.run_report import build_report

    return build_report(run.collector, run.settings, run.runs, str(config.rootpath))


@pytest.hookimpl
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    from pytest_rocm_llm.report.table import write_summary

    run = run_session(config)
    # --llm-plan, or a worker's run: what it has so far
    write_summary(terminalreporter, run.report or _report_so_far(config, run))


@pytest.hookimpl
def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(SESSION_KEY, None)  # None: configure stopped on a usage error
    if run is not None and run.pool is not None:
        run.pool.stop_all()
