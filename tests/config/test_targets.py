"""Target profiles and the hardware check.

No machine here has an AMD GPU, so the GPU tools are replaced by small scripts on PATH
that print what rocminfo prints on a gfx942 or gfx950 node: a test double for hardware that
cannot be produced here, used only to drive the check."""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

import pytest

from pytest_rocm_llm.config.builds import BASELINE, Build
from pytest_rocm_llm.config.targets import TARGETS, HardwareMismatch, check_hardware
from tests.conftest import SMOKE_MODEL

ROCMINFO = """#!/bin/sh
cat <<'EOF'
*******
Agent 1
*******
  Name:                    AMD EPYC 9575F 64-Core Processor
  Device Type:             CPU
*******
Agent 2
*******
  Name:                    {arch}
  Marketing Name:          AMD Instinct {name}
  Device Type:             GPU
EOF
"""


def fake_rocminfo(directory: Path, arch: str, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / "rocminfo"
    tool.write_text(ROCMINFO.format(arch=arch, name=name))
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return directory


def test_published_target_figures() -> None:
    mi355x = TARGETS["mi355x"]
    assert (mi355x.gfx_arch, mi355x.gpus_per_node, mi355x.hbm_gb_per_gpu) == ("gfx950", 8, 288)
    assert mi355x.usd_per_gpu_hour == 1.48
    assert TARGETS["mi325x"].gfx_arch == TARGETS["mi300x"].gfx_arch == "gfx942"
    assert not TARGETS["cpu"].is_gpu and TARGETS["cpu"].env["HIP_VISIBLE_DEVICES"] == ""


def test_cpu_target_is_always_available() -> None:
    check_hardware(TARGETS["cpu"])


def test_gpu_target_without_gpu_tools_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HardwareMismatch, match="neither rocminfo nor amd-smi reported a GPU"):
        check_hardware(TARGETS["mi355x"])


def test_matching_architecture_passes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bindir = fake_rocminfo(tmp_path / "bin", "gfx950", "MI355X")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    check_hardware(TARGETS["mi355x"])


def test_mismatch_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    bindir = fake_rocminfo(tmp_path / "bin", "gfx942", "MI300X")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(HardwareMismatch) as info:
        check_hardware(TARGETS["mi355x"])
    assert str(info.value) == ("--rocm-target mi355x expects gfx950 but this node has gfx942; "
                               "pick the target that matches the node")


def test_mismatch_stops_the_run_before_any_server(pytester: pytest.Pytester, suite_dir,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = fake_rocminfo(pytester.path / "fakebin", "gfx942", "MI325X")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    suite_dir(f'[suite]\nname = "demo"\n{SMOKE_MODEL}\n[profiles.default]\n',
              {"test_a.py": "def test_a(llm_server): pass"})
    result = pytester.runpytest("--rocm-target", "mi355x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "expects gfx950 but this node has gfx942" in result.stderr.str()
    assert "loading server" not in result.stdout.str()


def _engine_cmd(bindir: Path) -> tuple[str, ...]:
    """An engine command prefix whose exec part puts the stand-in GPU tools on PATH (as
    ``docker exec CTR`` reaches a GPU node's tools), followed by the interpreter."""
    return ("env", f"PATH={bindir}{os.pathsep}{os.environ['PATH']}", sys.executable)


def test_the_check_runs_the_tools_through_the_exec_part_not_the_interpreter(
        tmp_path: Path) -> None:
    # The stand-in rocminfo is reachable only through the prefix's exec part, as a GPU
    # node's tools are only inside the engine's container.
    build = Build(BASELINE, _engine_cmd(fake_rocminfo(tmp_path / "bin", "gfx950", "MI355X")))
    assert build.exec_part == build.engine_prefix[:-1]
    check_hardware(TARGETS["mi355x"], build.exec_part)


def test_a_prefixed_run_reports_the_prefixed_nodes_architecture(
        pytester: pytest.Pytester, suite_dir) -> None:
    bindir = fake_rocminfo(pytester.path / "nodebin", "gfx942", "MI325X")
    suite_dir(f'[suite]\nname = "demo"\n{SMOKE_MODEL}\n[profiles.default]\n',
              {"test_a.py": "def test_a(llm_server): pass"})
    result = pytester.runpytest("--rocm-target", "mi355x", "--llm-engine-cmd",
                                shlex.join(_engine_cmd(bindir)))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    # Only the stand-in behind the prefix knows gfx942: the check ran it there.
    assert "expects gfx950 but this node has gfx942" in result.stderr.str()
