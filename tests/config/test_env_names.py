"""Environment variables have one prefix, PYTEST_ROCM_LLM_ (PYTEST_ROCM_TARGET goes with
--rocm-target); the older ROCM_LLM_ spellings still work and warn, naming the new one."""

from __future__ import annotations

import re
import tomllib
import warnings
from pathlib import Path

import pytest

from pytest_rocm_llm.config.settings import OPTIONS, Settings
from pytest_rocm_llm.config.suite import load_suite, parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.serving.launch import ConfigProblem
from pytest_rocm_llm.serving.pool import ServerPool

ROOT = Path(__file__).resolve().parents[2]

SHOW_DATA_DIR = """
def test_x(llm_settings):
    print("DATA_DIR=" + str(llm_settings.data_dir))
"""


def test_options_and_shipped_suites_use_the_one_prefix() -> None:
    assert [o.env for o in OPTIONS if o.env and not o.env.startswith("PYTEST_ROCM_")] == []
    declared = {f.parent.name: load_suite(f).model.path_env
                for f in sorted((ROOT / "suites").glob("*/suite.toml"))}
    assert declared and all(v is None or v.startswith("PYTEST_ROCM_LLM_")
                            for v in declared.values()), declared


def run_showing_data_dir(pytester: pytest.Pytester) -> tuple[str, str]:
    pytester.makepyfile(SHOW_DATA_DIR)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    return re.search(r"DATA_DIR=(\S+)", out).group(1), out


DEPRECATED = ("DeprecationWarning: environment variable ROCM_LLM_DATA_DIR is deprecated: "
              "set PYTEST_ROCM_LLM_DATA_DIR instead")


@pytest.mark.parametrize("env, read, warns", [
    ({"PYTEST_ROCM_LLM_DATA_DIR": "new"}, "new", False),
    ({"ROCM_LLM_DATA_DIR": "old"}, "old", True),
    ({"PYTEST_ROCM_LLM_DATA_DIR": "new", "ROCM_LLM_DATA_DIR": "old"}, "new", False),
], ids=["new-name-read-without-a-warning", "old-name-still-works-and-warns-naming-the-new",
        "new-name-wins-over-the-old"])
def test_the_data_dir_variable(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                               env: dict[str, str], read: str, warns: bool) -> None:
    """Each variable set to its own folder (``env``: variable -> folder name); the data dir
    is the folder ``read``, with the deprecation warning (in the warnings summary) or none."""
    for name in ("PYTEST_ROCM_LLM_DATA_DIR", "ROCM_LLM_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name, folder in env.items():
        monkeypatch.setenv(name, str(pytester.mkdir(folder)))
    value, out = run_showing_data_dir(pytester)
    assert value == str((pytester.path / read).resolve())
    assert (DEPRECATED in out) == warns
    assert ("DeprecationWarning" in out) == warns


SUITE = """
[suite]
name = "envdemo"
[model]
id = "x/demo"
served_name = "demo"
path_env = "PYTEST_ROCM_LLM_ENVDEMO_MODEL"
[profiles.default]
"""


def model_path(tmp_path: Path) -> str:
    suite = parse_suite(tmp_path / "suite.toml", tomllib.loads(SUITE))
    cpu = TARGETS["cpu"]
    settings = Settings(cpu, None, None, None, 60.0, False, None, "127.0.0.1", tmp_path)
    pool = ServerPool(settings, tmp_path, lambda _msg: None)
    return pool._model_path(suite, suite.model_for(cpu), ("python3",), "sglang")


def test_suite_model_variable_falls_back_to_the_old_spelling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "model"
    model.mkdir()
    monkeypatch.delenv("PYTEST_ROCM_LLM_ENVDEMO_MODEL", raising=False)
    monkeypatch.setenv("ROCM_LLM_ENVDEMO_MODEL", str(model))
    with pytest.warns(DeprecationWarning, match="environment variable ROCM_LLM_ENVDEMO_MODEL "
                                                "is deprecated: set "
                                                "PYTEST_ROCM_LLM_ENVDEMO_MODEL instead"):
        assert model_path(tmp_path) == str(model)
    # a bad value is reported under the name the user actually set
    monkeypatch.setenv("ROCM_LLM_ENVDEMO_MODEL", str(tmp_path / "missing"))
    with pytest.warns(DeprecationWarning), \
            pytest.raises(ConfigProblem, match=r"^\$ROCM_LLM_ENVDEMO_MODEL=.*missing is not"):
        model_path(tmp_path)


def test_suite_model_variable_new_spelling_wins(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    new, old = tmp_path / "new", tmp_path / "old"
    new.mkdir()
    old.mkdir()
    monkeypatch.setenv("PYTEST_ROCM_LLM_ENVDEMO_MODEL", str(new))
    monkeypatch.setenv("ROCM_LLM_ENVDEMO_MODEL", str(old))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert model_path(tmp_path) == str(new)
