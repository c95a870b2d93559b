"""The CPU reference's builds are checked against the cache's free disk before they start.

The disk is read for real (shutil.disk_usage of the test's own directory); what is injected
is the size a build needs, raised past any disk, because a full disk cannot be produced on
demand on a shared machine. A CI run once failed minutes into the vLLM build with pip's
"[Errno 28] No space left on device"; these say it before anything is built.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_rocm_llm.serving.reference import provision
from pytest_rocm_llm.serving.reference.provision import (
    ProvisionError,
    engine_dir,
    ensure_engine,
    space_problem,
)
from tests.conftest import SMOKE_MODEL

BEYOND_ANY_DISK = 1e9  # GiB


@pytest.fixture
def huge_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provision, "BUILD_DISK_GIB",
                        dict.fromkeys(provision.BUILD_DISK_GIB, BEYOND_ANY_DISK))


def test_builds_that_fit_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    free = shutil.disk_usage(tmp_path).free / 2**30
    monkeypatch.setattr(provision, "BUILD_DISK_GIB", {"sglang": free / 4, "vllm": free / 4})
    assert space_problem(tmp_path / "cache", ["sglang", "vllm"]) is None


def test_builds_that_do_not_fit_together_are_named_with_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    free = shutil.disk_usage(tmp_path).free / 2**30
    # Each fits alone; both do not: the need is the sum of what is still to build.
    monkeypatch.setattr(provision, "BUILD_DISK_GIB", {"sglang": free * 0.6, "vllm": free * 0.6})
    cache = tmp_path / "not" / "made" / "yet"
    assert space_problem(cache, ["vllm"]) is None
    problem = space_problem(cache, ["sglang", "vllm", "sglang"])
    assert problem is not None
    assert "sglang and vllm environments" in problem
    assert str(cache) in problem
    assert "--llm-cache-dir" in problem and "PYTEST_ROCM_LLM_CACHE" in problem
    assert f"{free * 1.2:g}"[:3] in problem  # the need, in GiB


def test_built_environments_need_no_space(tmp_path: Path, huge_builds: None) -> None:
    for engine in ("sglang", "vllm"):
        done = engine_dir(tmp_path, engine) / ".complete"
        done.parent.mkdir(parents=True)
        done.write_text("built")
    assert space_problem(tmp_path, ["sglang", "vllm"]) is None


def test_engines_without_a_reference_build_are_not_counted(tmp_path: Path,
                                                           huge_builds: None) -> None:
    assert space_problem(tmp_path, ["atom"]) is None


def test_a_build_that_cannot_fit_stops_before_anything_is_made(tmp_path: Path,
                                                               huge_builds: None) -> None:
    lines: list[str] = []
    with pytest.raises(ProvisionError, match="--llm-cache-dir") as exc:
        ensure_engine(tmp_path, lines.append, engine="vllm")
    assert "vllm environment need" in str(exc.value)
    assert not engine_dir(tmp_path, "vllm").exists()
    assert not list((tmp_path / "engines").glob("*.build.log"))
    assert lines == []  # no "building ..." announced


SUITE = f"""
[suite]
name = "space"
{SMOKE_MODEL}
[profiles.default]

[profiles.spec]
engine = "vllm"
"""


def test_a_cpu_run_stops_before_any_launch_when_its_builds_cannot_fit(
        pytester: pytest.Pytester, suite_dir, huge_builds: None) -> None:
    suite_dir(SUITE, {"test_space.py": "def test_up(llm_server):\n    pass\n"}, name="space")
    pytester.makeini("[pytest]\n")
    cache = pytester.path / "cache"
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--rocm-target", "cpu",
                                          "--llm-cache-dir", str(cache), "suites")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "sglang and vllm environments" in err and "--llm-cache-dir" in err
    assert not (cache / "engines").exists()  # nothing was built, nothing launched
