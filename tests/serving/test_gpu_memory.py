"""GPU memory hygiene before a start on a GPU node: VRAM read by amd-smi (else rocm-smi) where
the engine runs, the server's GPUs waited for until at or below the idle bound, a GPU still
held after the bound an infrastructure failure naming it, and one retry of a start that failed
with a drain signature (GPU targets only).

The tools are stand-ins on PATH that print what amd-smi 6.x / rocm-smi print: real GPUs are
the only source of those readings (no GPU here). The pool's retry is driven through the real
ServerPool.get with its launch replaced (the policy is what is under test)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pytest_rocm_llm.config.platforms.base import GpuMemory
from pytest_rocm_llm.config.platforms.cuda import CUDA
from pytest_rocm_llm.config.platforms.rocm import ROCM, parse_amd_smi, parse_rocm_smi
from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.serving import gpu_memory
from pytest_rocm_llm.serving.gpu_memory import GpuMemoryHeld, devices_of, wait_until_idle
from pytest_rocm_llm.serving.pool import ServerPool
from pytest_rocm_llm.serving.process import ServerDied
from pytest_rocm_llm.serving.server import LLMServer
from tests.serving.test_pool_policy import THREE, FakeProcess

TOTAL_MB = 288 * 1024


def amd_smi_json(used_mb: list[float], wrapped: bool = False) -> str:
    gpus = [{"gpu": i, "mem_usage": {"total_vram": {"value": TOTAL_MB, "unit": "MB"},
                                     "used_vram": {"value": u, "unit": "MB"},
                                     "free_vram": {"value": TOTAL_MB - u, "unit": "MB"}}}
            for i, u in enumerate(used_mb)]
    return json.dumps({"gpu_data": gpus} if wrapped else gpus)


def stand_in(bindir: Path, name: str, states: list[str]) -> Path:
    """A tool that prints states[k] on its k-th call (the last one from then on)."""
    bindir.mkdir(parents=True, exist_ok=True)
    for k, text in enumerate(states):
        (bindir / f"{name}.{k}").write_text(text)
    tool = bindir / name
    tool.write_text(f"""#!/bin/sh
n=$(cat {bindir}/{name}.calls 2>/dev/null || echo 0)
echo $((n + 1)) > {bindir}/{name}.calls
k=$n; [ $k -ge {len(states)} ] && k={len(states) - 1}
cat {bindir}/{name}.$k
""")
    tool.chmod(0o755)
    return tool


def test_amd_smi_readings_in_both_shapes() -> None:
    for wrapped in (False, True):
        gpus = parse_amd_smi(amd_smi_json([283, 0.4 * TOTAL_MB], wrapped))
        assert [(g.index, round(g.used_pct)) for g in gpus] == [(0, 0), (1, 40)]
    # a GPU whose reading is "N/A" is left out, not read as 0
    assert parse_amd_smi(json.dumps([{"gpu": 0, "mem_usage": {
        "total_vram": "N/A", "used_vram": "N/A"}}])) == []


def test_rocm_smi_readings() -> None:
    text = json.dumps({"card0": {"VRAM Total Memory (B)": str(288 * 2**30),
                                 "VRAM Total Used Memory (B)": str(29 * 2**30)},
                       "system": {"Driver version": "6.10"}})
    (gpu,) = parse_rocm_smi(text)
    assert gpu.index == 0 and 10 < gpu.used_pct < 10.1


def test_read_vram_falls_back_to_rocm_smi(tmp_path: Path, monkeypatch) -> None:
    bindir = tmp_path / "bin"
    stand_in(bindir, "rocm-smi", [json.dumps({"card3": {
        "VRAM Total Memory (B)": "1000", "VRAM Total Used Memory (B)": "500"}})])
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    (gpu,) = ROCM.read_vram(())
    assert gpu.index == 3 and gpu.used_pct == 50
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert ROCM.read_vram(()) is None


def test_a_draining_gpu_is_waited_for_then_the_start_goes_ahead(tmp_path: Path,
                                                                monkeypatch) -> None:
    bindir = tmp_path / "bin"
    stand_in(bindir, "amd-smi", [amd_smi_json([0.6 * TOTAL_MB, 0]),
                                 amd_smi_json([0.3 * TOTAL_MB, 0]), amd_smi_json([100, 0])])
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    said: list[str] = []
    now = [0.0]
    got = wait_until_idle((), None, 10.0, 900.0, said.append, "glm52/reference",
                          sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0])
    assert got is not None and max(g.used_pct for g in got) < 10
    assert (bindir / "amd-smi.calls").read_text().strip() == "3"
    assert said[0].startswith("[rocm-llm] glm52/reference: waiting for GPU memory to be "
                              "released (up to 900 s): GPU 0: 60% VRAM in use")
    assert said[-1] == "[rocm-llm] glm52/reference: GPU memory released after 10 s"


def test_a_gpu_held_past_the_bound_fails_the_start_naming_it() -> None:
    now = [0.0]
    held = [GpuMemory(0, 100, TOTAL_MB), GpuMemory(5, 0.42 * TOTAL_MB, TOTAL_MB)]
    with pytest.raises(GpuMemoryHeld) as info:
        wait_until_idle((), None, 10.0, 60.0, lambda m: None, "glm52/reference",
                        read=lambda prefix: held,
                        sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0])
    msg = str(info.value)
    assert "1 GPU(s) stayed above 10% VRAM in use for 60 s (GPU 5: 42% VRAM in use" in msg
    assert "GPU 0" not in msg and "amd-smi process" in msg


def test_only_the_servers_own_gpus_are_waited_for() -> None:
    gpus = [GpuMemory(0, 0, TOTAL_MB), GpuMemory(7, 0.9 * TOTAL_MB, TOTAL_MB)]
    assert devices_of({"HIP_VISIBLE_DEVICES": "0,1,2,3"}, ROCM.device_variables) == {0, 1, 2, 3}
    assert devices_of({"HIP_VISIBLE_DEVICES": ""}, ROCM.device_variables) is None
    mine = devices_of({"HIP_VISIBLE_DEVICES": "0,1,2,3"}, ROCM.device_variables)
    got = wait_until_idle((), mine, 10.0, 60.0, lambda m: None, "x", read=lambda prefix: gpus,
                          sleep=lambda s: pytest.fail("waited"))
    assert got == gpus


def test_the_tools_run_where_the_engine_runs(tmp_path: Path) -> None:
    seen = tmp_path / "argv"
    prefix = tmp_path / "exec"
    prefix.write_text(f'#!/bin/sh\necho "$@" >> {seen}\necho \'{amd_smi_json([0])}\'\n')
    prefix.chmod(0o755)
    assert ROCM.read_vram((str(prefix), "CTR")) is not None
    assert seen.read_text().splitlines()[0] == "CTR amd-smi metric --mem-usage --json"


NVIDIA_SMI = ("0, NVIDIA B200, 10.0, 1024, 183359\n"
              "1, NVIDIA B200, 10.0, 120000, 183359\n")


def test_an_nvidia_node_is_read_with_nvidia_smi_and_its_own_device_variable(
        tmp_path: Path, monkeypatch) -> None:
    # A B200 node as nvidia-smi prints it (no NVIDIA GPU here: the stand-in prints its lines).
    bindir = tmp_path / "bin"
    stand_in(bindir, "nvidia-smi", [NVIDIA_SMI])
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    assert CUDA.detect_archs(()) == {"sm_100"}
    gpus = CUDA.read_vram(())
    assert [(g.index, round(g.used_pct)) for g in gpus or ()] == [(0, 1), (1, 65)]
    assert ROCM.read_vram(()) is None  # no AMD tool on this node
    # HIP_VISIBLE_DEVICES means nothing to a CUDA server; CUDA_VISIBLE_DEVICES does
    assert devices_of({"HIP_VISIBLE_DEVICES": "1"}, CUDA.device_variables) is None
    assert devices_of({"CUDA_VISIBLE_DEVICES": "0"}, CUDA.device_variables) == {0}
    now = [0.0]
    with pytest.raises(GpuMemoryHeld) as info:
        wait_until_idle((), {1}, 10.0, 30.0, lambda m: None, "glm52/reference", CUDA,
                        sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0])
    assert "GPU 1: 65% VRAM in use" in str(info.value)
    assert "nvidia-smi --query-compute-apps" in str(info.value)


def drained_pool(tmp_path: Path, monkeypatch, target: str, log_line: str):
    suite = parse_suite(tmp_path / "suite.toml", tomllib.loads(THREE))
    settings = Settings(TARGETS[target], None, None, None, 60.0, False, None, "127.0.0.1",
                        tmp_path)
    messages: list[str] = []
    pool = ServerPool(settings, tmp_path, messages.append)
    monkeypatch.setattr(pool, "_prepare_suite", lambda s, engine, build: None)
    monkeypatch.setattr(pool, "_verify_effective", lambda s, p, srv: None)
    log = tmp_path / "server.log"
    log.write_text(f"loading\n{log_line}\n")
    calls = []

    def launch(s, p, st, build):
        calls.append(p)
        if len(calls) == 1:
            raise ServerDied("server process exited with code 1", log)
        return LLMServer(s.name, p, "http://x", "sglang", "m", "/m", (), {}, "0",
                         FakeProcess(), None, build.name)

    monkeypatch.setattr(pool, "_launch", launch)
    return pool, suite, calls, messages


UNBALANCED = ("RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by "
              "other processes. pre_model_load_memory=120.5")


def test_a_start_that_met_a_drain_is_retried_once_on_a_gpu_node(tmp_path: Path,
                                                                 monkeypatch) -> None:
    pool, suite, calls, messages = drained_pool(tmp_path, monkeypatch, "mi355x", UNBALANCED)
    server = pool.get(suite, "reference")
    assert server.profile == "reference" and calls == ["reference", "reference"]
    assert any("failed with unbalanced-gpu-memory" in m and "one retry" in m
               for m in messages), messages


@pytest.mark.parametrize(("target", "line"), [("cpu", UNBALANCED),
                                              ("mi355x", "ValueError: bad config")])
def test_no_retry_off_gpu_or_for_another_failure(tmp_path: Path, monkeypatch, target: str,
                                                 line: str) -> None:
    pool, suite, calls, _ = drained_pool(tmp_path, monkeypatch, target, line)
    with pytest.raises(ServerDied):
        pool.get(suite, "reference")
    assert calls == ["reference"]
    with pytest.raises(ServerDied):  # sticky: the later test errors at once
        pool.get(suite, "reference")
    assert calls == ["reference"]


def test_a_gpu_held_past_the_bound_is_reported_once_not_waited_for_by_every_test(
        tmp_path: Path, monkeypatch) -> None:
    pool, suite, calls, _ = drained_pool(tmp_path, monkeypatch, "mi355x", UNBALANCED)

    def held(s, p, st, build):
        calls.append(p)
        raise GpuMemoryHeld("GPU 3 still holds 40% of its VRAM after 900 s")

    monkeypatch.setattr(pool, "_launch", held)
    for _ in range(2):
        with pytest.raises(GpuMemoryHeld, match="GPU 3"):
            pool.get(suite, "reference")
    assert calls == ["reference"]  # the second test got the first one's failure at once


def test_drain_signatures_are_known_signatures() -> None:
    from pytest_rocm_llm.serving.signatures import load

    ids = {s.id for s in load()}
    assert set(gpu_memory.DRAIN_SIGNATURES) <= ids
    assert "scheduler-watchdog-timeout" in ids
