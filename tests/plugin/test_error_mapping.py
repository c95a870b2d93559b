"""The plugin turns the project's error categories (pytest_rocm_llm.errors) into outcomes:
Unavailable skips with its message, ConfigError stops the run as a usage error with its
words unchanged."""

from __future__ import annotations

import pytest

from pytest_rocm_llm import errors
from pytest_rocm_llm.config.targets import HardwareMismatch
from pytest_rocm_llm.serving.launch import ConfigProblem
from pytest_rocm_llm.serving.pool import SuiteUnavailable
from pytest_rocm_llm.verdicts.baselines import load
from tests.conftest import suite_head

OTHER_TARGET = suite_head("elsewhere", {"default": {}}, targets=["mi355x"])


def test_categories() -> None:
    assert issubclass(SuiteUnavailable, errors.Unavailable)
    assert issubclass(ConfigProblem, errors.ConfigError)
    assert issubclass(HardwareMismatch, errors.ConfigError)
    assert issubclass(errors.VerdictFailure, AssertionError)


def test_unavailable_suite_skips_with_its_reason(pytester: pytest.Pytester, suite_dir) -> None:
    suite_dir(OTHER_TARGET, {"test_a.py": "def test_a(llm_server): pass\n"})
    result = pytester.runpytest("-p", "no:cacheprovider", "--rocm-target", "cpu", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*suite elsewhere does not run on target cpu (targets: mi355x)*"])


def test_broken_baseline_is_a_config_error_with_the_same_words(pytester: pytest.Pytester,
                                                                tmp_path) -> None:
    path = tmp_path / "smoke.json"
    path.write_text("{")
    with pytest.raises(errors.ConfigError) as info:
        load(path)
    # the plugin's boundary turns it into pytest's usage error, word for word
    pytester.makeconftest(f"""
from pathlib import Path
from pytest_rocm_llm.verdicts.baselines import load
from pytest_rocm_llm.plugin.state import usage_errors

def pytest_configure(config):
    with usage_errors():
        load(Path({str(path)!r}))
""")
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {info.value}" in result.stderr.str()
