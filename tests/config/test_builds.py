"""A paired run's builds from the command line: validated like the engine options, with
errors naming the candidate's own flag, and resolved once into frozen Builds."""

from __future__ import annotations

import sys

import pytest

from pytest_rocm_llm.config.builds import Build


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--llm-candidate-python", "/nonexistent/python"],
         "--llm-candidate-python: invalid value '/nonexistent/python'"),
        (["--llm-candidate-cmd", "no-such-launcher python3"],
         "--llm-candidate-cmd: invalid value 'no-such-launcher python3'; 'no-such-launcher' is "
         "not an executable on PATH"),
        (["--llm-candidate-python", sys.executable, "--llm-candidate-cmd", "python3"],
         "--llm-candidate-python and --llm-candidate-cmd both given"),
        (["--llm-candidate-env", "OMP_NUM_THREADS"], "--llm-candidate-env: invalid value "
                                                     "'OMP_NUM_THREADS'; expected KEY=VALUE"),
        (["--llm-candidate-flags", "dtype float32"], "--llm-candidate-flags: invalid value"),
        (["--llm-pair-trials", "0"], "--llm-pair-trials: invalid value '0'"),
        (["--llm-inconclusive", "ignore"], "--llm-inconclusive: invalid value 'ignore'; "
                                           "accepted: fail, pass"),
    ],
)
def test_bad_candidate_options_are_usage_errors(pytester: pytest.Pytester, args: list[str],
                                                expected: str) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected in result.stderr.str()


def test_a_configuration_change_runs_on_the_baselines_install(pytester: pytest.Pytester
                                                              ) -> None:
    pytester.makeconftest("""
from pytest_rocm_llm.plugin.state import SETTINGS_KEY

def pytest_collection_finish(session):
    s = session.config.stash[SETTINGS_KEY]
    print("BUILDS", [b.name for b in s.builds], s.candidate, s.pair_trials, s.inconclusive)
""")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess(
        "-s", "--llm-engine-python", sys.executable, "--llm-candidate-env", "OMP_NUM_THREADS=1",
        "--llm-candidate-env", "A=b c", "--llm-candidate-flags", "--dtype float32",
        "--llm-pair-trials", "3", "--llm-inconclusive", "pass")
    line = next(ln for ln in result.stdout.lines if ln.startswith("BUILDS"))
    assert line.startswith("BUILDS ['baseline', 'candidate'] Build(name='candidate', "
                           f"engine_prefix=('{sys.executable}',)")
    assert "{'OMP_NUM_THREADS': '1', 'A': 'b c'}" in line
    assert line.endswith("flags=('--dtype', 'float32')) 3 pass")


def test_without_candidate_options_a_run_has_one_build(pytester: pytest.Pytester) -> None:
    from pytest_rocm_llm.config.settings import OPTIONS, from_raw

    s = from_raw({o.flag: o.default for o in OPTIONS}, pytester.path)
    assert s.candidate is None
    assert s.builds == (Build("baseline", None),)
    assert (s.pair_trials, s.inconclusive) == (2, "fail")
    with pytest.raises(AttributeError):
        s.builds[0].name = "x"  # type: ignore[misc]
