"""A paired run's builds from the command line, resolved once into frozen Builds (bad values
of the candidate's options: tests/plugin/test_options.py)."""

from __future__ import annotations

import sys

import pytest

from pytest_rocm_llm.config.builds import Build
from pytest_rocm_llm.config.settings import parse_engine
from pytest_rocm_llm.errors import ConfigError


def test_a_configuration_change_runs_on_the_baselines_install(pytester: pytest.Pytester
                                                              ) -> None:
    pytester.makeconftest("""
from pytest_rocm_llm.plugin.state import run_session

def pytest_collection_finish(session):
    s = run_session(session.config).settings
    print("BUILDS", [b.name for b in s.builds], s.candidate, s.pair_trials, s.inconclusive)
""")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess(
        "-s", "--llm-engine-python", sys.executable, "--llm-candidate-env", "OMP_NUM_THREADS=1",
        "--llm-candidate-env", "A=b c", "--llm-candidate-flags", "--dtype float32",
        "--llm-pair-trials", "3", "--llm-inconclusive", "pass")
    line = next(ln for ln in result.stdout.lines if ln.startswith("BUILDS"))
    assert line.startswith("BUILDS ['incumbent', 'candidate'] Build(name='candidate', "
                           f"engine_prefix=('{sys.executable}',)")
    assert "{'OMP_NUM_THREADS': '1', 'A': 'b c'}" in line
    assert line.endswith("flags=('--dtype', 'float32'), image=None) 3 pass")


def test_without_candidate_options_a_run_has_one_build(pytester: pytest.Pytester) -> None:
    from pytest_rocm_llm.config.settings import OPTIONS, from_raw

    s = from_raw({o.flag: o.default for o in OPTIONS}, pytester.path)
    assert s.candidate is None
    assert s.builds == (Build("incumbent", None),)
    assert (s.pair_trials, s.pair_budget, s.inconclusive) == (4, None, "fail")
    with pytest.raises(AttributeError):
        s.builds[0].name = "x"  # type: ignore[misc]


def test_the_pair_budget_comes_from_flag_ini_or_environment(pytester: pytest.Pytester,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    from pytest_rocm_llm.config.settings import OPTIONS, from_raw
    from pytest_rocm_llm.errors import ConfigError

    (opt,) = [o for o in OPTIONS if o.flag == "--llm-pair-budget"]
    assert (opt.ini, opt.env) == ("llm_pair_budget", "PYTEST_ROCM_LLM_PAIR_BUDGET")
    raw = {o.flag: o.default for o in OPTIONS}
    assert from_raw({**raw, "--llm-pair-budget": "24"}, pytester.path).pair_budget == 24
    with pytest.raises(ConfigError, match="--llm-pair-budget: invalid value '2'; it is the "
                                          "most trials per build and --llm-pair-trials"):
        from_raw({**raw, "--llm-pair-budget": "2"}, pytester.path)
    pytester.makeconftest("""
from pytest_rocm_llm.plugin.state import run_session

def pytest_collection_finish(session):
    print("BUDGET", run_session(session.config).settings.pair_budget)
""")
    pytester.makepyfile("def test_x(): pass")
    monkeypatch.setenv("PYTEST_ROCM_LLM_PAIR_BUDGET", "30")
    result = pytester.runpytest_inprocess("-s")
    assert "BUDGET 30" in result.stdout.lines


@pytest.mark.parametrize("cmd", ["docker exec ctr python3", "podman exec -e A=1 ctr python3",
                                 "sudo docker container exec ctr python3"])
def test_an_exec_prefix_is_refused_naming_the_image_option(cmd: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_engine(None, cmd)
    assert "--llm-engine-image IMAGE" in str(info.value) and "\n" not in str(info.value)


def test_a_runtime_that_runs_no_exec_is_not_refused() -> None:
    # `docker` as the interpreter's name or `exec` elsewhere is no exec client
    assert parse_engine(None, "env exec=1 python3") == ("env", "exec=1", "python3")
