"""pytest-rocm-llm's fixtures: thin wrappers over the pool, the runs and the judge.

Registered by the plugin at configure time (plugin.py), so loading the plugin stays light.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from pytest_rocm_llm.config import settings as settings_mod
from pytest_rocm_llm.config.builds import Build
from pytest_rocm_llm.config.suite_model import Suite
from pytest_rocm_llm.config.targets import Target
from pytest_rocm_llm.errors import Unavailable
from pytest_rocm_llm.plugin.state import SUITE_KEY, run_session, usage_errors
from pytest_rocm_llm.serving.diagnosis import infrastructure_errors, infrastructure_failure
from pytest_rocm_llm.serving.launch import ConfigProblem
from pytest_rocm_llm.serving.pool import ServerPool
from pytest_rocm_llm.serving.server import LLMServer

if TYPE_CHECKING:
    from pytest_rocm_llm.config.checks import Check
    from pytest_rocm_llm.correctness.runs import EvalRuns
    from pytest_rocm_llm.performance.runs import WorkloadRuns
    from pytest_rocm_llm.performance.workloads import WorkloadResult


@pytest.fixture(scope="session")
def llm_settings(pytestconfig: pytest.Config) -> settings_mod.Settings:
    """The run's resolved settings (command line > ini > environment > default)."""
    return run_session(pytestconfig).settings


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
        llm_settings, log_dir, None,  # progress: the pool's log records
        phases=run_session(pytestconfig).collector.phases,
        on_ready=lambda srv: hook.pytest_rocm_llm_server_ready(config=pytestconfig, server=srv),
        on_stop=lambda srv, code: hook.pytest_rocm_llm_server_stopped(
            config=pytestconfig, server=srv, exit_code=code),
    )
    run_session(pytestconfig).pool = pool
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
                pytestconfig: pytest.Config) -> Callable[..., LLMServer]:
    """Factory: ``llm_servers("spec")`` gives the suite's server for that profile;
    ``llm_servers("spec", build)`` a paired run's server of that build (config/builds.py)."""

    def get(profile: str | None = None, build: Build | None = None) -> LLMServer:
        name = profile or llm_suite.default_profile
        try:
            return llm_pool.get(llm_suite, name, build)
        except Unavailable as exc:  # pool.SuiteUnavailable: no model, another target
            skip_reason, failure = str(exc), None
        except ConfigProblem as exc:
            skip_reason, failure = None, str(exc)
        except infrastructure_errors() as exc:
            skip_reason, failure = None, infrastructure_failure(
                run_session(pytestconfig).settings.signatures_file, exc)
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
    from pytest_rocm_llm.client.generate import LLMClient

    with LLMClient(llm_server) as client:
        yield client


@pytest.fixture(scope="session")
def llm_runs(pytestconfig: pytest.Config, llm_target: Target,
             llm_settings: settings_mod.Settings,
             tmp_path_factory: pytest.TempPathFactory) -> WorkloadRuns:
    """Each declared workload's result, run once per session and shared by its checks."""
    import functools

    from pytest_rocm_llm.performance.runs import WorkloadRuns

    @functools.cache
    def corpus(source: str) -> tuple[str, ...]:
        from pytest_rocm_llm.correctness.accuracy import gsm8k

        assert source == "gsm8k", source  # config/workload.py PROMPT_SOURCES
        return tuple(gsm8k.passages(llm_settings.data_dir))

    runs = WorkloadRuns(llm_target, tmp_path_factory.getbasetemp() / "llm-workloads",
                        None, run_session(pytestconfig).collector.phases,  # progress: logged
                        corpus=corpus)
    run_session(pytestconfig).runs = runs
    return runs


@pytest.fixture(scope="session")
def llm_evals(pytestconfig: pytest.Config, llm_settings: settings_mod.Settings,
              tmp_path_factory: pytest.TempPathFactory) -> EvalRuns:
    """Each declared evaluation's result, run once per session and shared by its checks."""
    from pytest_rocm_llm.correctness.runs import EvalRuns

    evals = EvalRuns(tmp_path_factory.getbasetemp() / "llm-evals", llm_settings.data_dir,
                     llm_settings.gpqa_csv, llm_settings.gpqa_sha256,
                     phases=run_session(pytestconfig).collector.phases)
    run_session(pytestconfig).evals = evals
    return evals


@pytest.fixture(scope="session")
def llm_paired(pytestconfig: pytest.Config, llm_settings: settings_mod.Settings,
               tmp_path_factory: pytest.TempPathFactory) -> bool:
    """A paired run's shared state (the workloads' trials, the candidate's evaluations),
    kept on the run session; whether this is a paired run."""
    if llm_settings.candidate is None:
        return False
    from pytest_rocm_llm.correctness.runs import EvalRuns
    from pytest_rocm_llm.verdicts.paired_trials import PairedRuns
    from pytest_rocm_llm.verdicts.sequential import settings_design

    run = run_session(pytestconfig)
    run.paired_trials = PairedRuns(settings_design(llm_settings))
    run.candidate_evals = EvalRuns(
        tmp_path_factory.getbasetemp() / "llm-evals-candidate", llm_settings.data_dir,
        llm_settings.gpqa_csv, llm_settings.gpqa_sha256, phases=run.collector.phases)
    return True


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
        except infrastructure_errors() as exc:
            failure = infrastructure_failure(
                run_session(request.config).settings.signatures_file, exc)
        else:
            request.node.user_properties.append(
                ("llm_metrics", {"workload": name, "profile": server.profile,
                                 **result.metrics}))
            return result
        pytest.fail(failure, pytrace=False)

    return run


@pytest.fixture
def llm_judge(request: pytest.FixtureRequest, llm_suite: Suite, llm_target: Target,
              llm_settings: settings_mod.Settings,
              llm_servers: Callable[[str | None], LLMServer],
              llm_runs: WorkloadRuns, llm_evals: EvalRuns,
              llm_paired: bool) -> Callable[[Check], float | None]:
    """``llm_judge(check)``: run what the check reads (once per session), judge it against
    its floor and its baseline, record the verdict; fails the test with what broke."""
    from pytest_rocm_llm.plugin.check_context import CheckContext
    from pytest_rocm_llm.plugin.judging import run_eval_check, run_workload_check

    ctx = CheckContext(
        run_session(request.config), llm_suite, llm_target,
        lambda exc: infrastructure_failure(llm_settings.signatures_file, exc),
        infrastructure_errors())

    def judge(check: Check) -> float | None:
        __tracebackhide__ = True
        with usage_errors():  # a broken baseline file, named with the field and the fix
            if check.eval is not None:
                return run_eval_check(request, ctx, check, llm_servers, llm_evals)
            return run_workload_check(request, ctx, check, llm_servers, llm_runs)

    return judge
