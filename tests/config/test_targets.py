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

from pytest_rocm_llm.config.builds import INCUMBENT, Build
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


def fake_tool(directory: Path, name: str, script: str) -> Path:
    """A stand-in for a node's GPU tool: ``script`` as ``directory/name``, executable."""
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / name
    tool.write_text(script)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return directory


def fake_rocminfo(directory: Path, arch: str, name: str) -> Path:
    return fake_tool(directory, "rocminfo", ROCMINFO.format(arch=arch, name=name))


def test_published_target_figures() -> None:
    mi355x = TARGETS["mi355x"]
    assert (mi355x.arch, mi355x.gpus_per_node, mi355x.hbm_gb_per_gpu) == ("gfx950", 8, 288)
    assert mi355x.usd_per_gpu_hour == 1.48
    assert TARGETS["mi325x"].arch == TARGETS["mi300x"].arch == "gfx942"
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
    build = Build(INCUMBENT, _engine_cmd(fake_rocminfo(tmp_path / "bin", "gfx950", "MI355X")))
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


NVIDIA_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu=index,name,compute_cap,memory.used,memory.total*)
    echo "0, NVIDIA {name}, {cap}, 1024, 183359"; echo "1, NVIDIA {name}, {cap}, 900, 183359";;
  *) exit 9;;
esac
"""


def fake_nvidia_smi(directory: Path, name: str, cap: str) -> Path:
    return fake_tool(directory, "nvidia-smi", NVIDIA_SMI.format(name=name, cap=cap))


def test_an_nvidia_target_is_a_gpu_target_of_its_own_platform(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    # nvidia-smi as it prints on an HGX B200 node (stand-in: no NVIDIA GPU here).
    b200, h200 = TARGETS["b200"], TARGETS["h200"]
    assert (b200.arch, b200.gpus_per_node, b200.usd_per_gpu_hour) == ("sm_100", 8, 1.95)
    assert b200.is_gpu and b200.platform.vendor == "NVIDIA" and h200.arch == "sm_90"
    assert "--gpus" in b200.container_args and "/dev/kfd" not in b200.container_args
    monkeypatch.setenv("PATH", str(fake_nvidia_smi(tmp_path / "bin", "B200", "10.0")))
    check_hardware(b200)
    with pytest.raises(HardwareMismatch, match="expects sm_90 but this node has sm_100"):
        check_hardware(h200)
    # an AMD target on this node: its tools are not here, and it says which it looked for
    with pytest.raises(HardwareMismatch, match="neither rocminfo nor amd-smi reported a GPU"):
        check_hardware(TARGETS["mi355x"])
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(HardwareMismatch, match="needs an NVIDIA GPU node .sm_100., but "
                                               "neither nvidia-smi reported a GPU"):
        check_hardware(b200)


def test_an_nvidia_target_gets_no_cpu_reference_stub_or_environment(tmp_path: Path) -> None:
    # Before platforms, "GPU" meant "ROCm": a CUDA target would have been served from the
    # CPU reference's environment with the sgl_kernel stub on its PYTHONPATH.
    import tomllib

    from pytest_rocm_llm.config.settings import Settings
    from pytest_rocm_llm.config.suite import parse_suite
    from pytest_rocm_llm.serving.launch import server_env
    from pytest_rocm_llm.serving.pool import ServerPool

    suite = parse_suite(tmp_path / "suite.toml", tomllib.loads(
        f'[suite]\nname = "n"\ntargets = ["b200", "cpu"]\n{SMOKE_MODEL}\n[profiles.default]\n'))
    assert "PYTHONPATH" not in server_env(suite, TARGETS["b200"], "default")
    assert "PYTHONPATH" in server_env(suite, TARGETS["cpu"], "default")
    settings = Settings(TARGETS["b200"], None, None, None, 60.0, False, None, "127.0.0.1",
                        tmp_path)
    pool = ServerPool(settings, tmp_path, lambda m: None)
    # the node's own interpreter, never a provisioned CPU environment
    assert pool.engine_prefix(suite, "sglang") == (sys.executable,)


def test_an_unknown_platform_is_named_with_the_known_ones() -> None:
    import dataclasses

    from pytest_rocm_llm.errors import ConfigError

    odd = dataclasses.replace(TARGETS["b200"], kind="tpu")
    with pytest.raises(ConfigError, match=r"'tpu' is not a platform kind \(cpu, rocm, cuda\); a "
                       r"package adds one through the 'pytest_rocm_llm.platforms' entry point"):
        assert odd.is_gpu
