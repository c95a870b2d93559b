"""Servers in containers (--llm-engine-image) with a real docker daemon and the real sglang
CPU reference: a decode, the profile's environment as the engine sees it, and nothing left
in `docker ps -a` after SIGKILL of pytest, in one run (it was two: a run costs its server
start, issue 20). Nothing left after a normal end is held by
tests/serving/test_engine_upgrade_gate.py (three containers, each stopped at a build switch or
at the end, `docker ps -a` unchanged). Skipped where no docker daemon answers.

The image: tests/cpu_ref_image.py.
"""

from __future__ import annotations

import json
import time

import psutil
import pytest

from tests.conftest import SMOKE_MODEL
from tests.cpu_ref_image import container_args, docker_answers, docker_ps, ensure_image
from tests.serving.test_engine_lifecycle import read_until, start_pytest

pytestmark = [pytest.mark.engine, pytest.mark.container]

IMAGE = "pytest-rocm-llm/cpu-ref:base"
SECRET = "s3cret-value-in-env-42"

SUITE = f"""
[suite]
name = "ctr"
{SMOKE_MODEL}
[profiles.default]
env = {{ PROBE_SEEN = "seen-in-container", PROBE_API_KEY = "{SECRET}" }}
"""

DECODE = """
import json, os, subprocess, time, psutil
from pytest_rocm_llm.client.generate import LLMClient

def test_decode(llm_server):
    with LLMClient(llm_server) as c:
        assert c.generate("Hi", max_new_tokens=4).completion_tokens == 4
    port = llm_server.base_url.rsplit(":", 1)[1]
    engine = []
    for p in psutil.process_iter():
        try:
            argv = p.cmdline()  # the engine's processes, not the runtime's client
            if "sglang.launch_server" in argv and port in argv and argv[0] != "docker":
                engine.append(p)
        except psutil.Error:
            pass
    names = subprocess.run(["docker", "ps", "--filter", "label=pytest-rocm-llm.suite=ctr",
                            "--format", "{{.Names}}"], capture_output=True, text=True).stdout
    top = subprocess.run(["docker", "top", names.strip(), "-o", "pid"], capture_output=True,
                         text=True).stdout.split()
    with open(os.environ["CTR_RECORD"] + ".part", "w") as fh:
        json.dump({"envs": [p.environ() for p in engine], "names": names.split(),
                   "in_container": [str(p.pid) in top for p in engine]}, fh)
    os.replace(os.environ["CTR_RECORD"] + ".part", os.environ["CTR_RECORD"])
    time.sleep(600)  # held: the test SIGKILLs pytest now
"""


@pytest.fixture(scope="module")
def image_args(request: pytest.FixtureRequest) -> list[str]:
    """Options that run the CPU reference in IMAGE (built here when missing)."""
    if not docker_answers():
        pytest.skip("no docker daemon reachable")
    request.getfixturevalue("reference_model_dir")  # only now: a skip builds nothing
    return ["--llm-engine-image", ensure_image(IMAGE), *container_args()]


def wait_for(expected: set[str], timeout: float) -> set[str]:
    deadline = time.monotonic() + timeout
    while (now := docker_ps()) != expected and time.monotonic() < deadline:
        time.sleep(1)
    return now


def test_a_server_in_a_container_decodes_sees_its_env_then_a_killed_pytest_leaves_nothing(
        pytester: pytest.Pytester, suite_dir, engine_env, image_args, monkeypatch) -> None:
    """SIGKILL gives pytest no chance to stop anything, and killing the runtime's client
    would not stop the container anyway: the guardian removes it."""
    before = docker_ps()
    record = pytester.path / "record.json"
    monkeypatch.setenv("CTR_RECORD", str(record))
    suite_dir(SUITE, {"test_ctr.py": DECODE}, name="ctr")
    proc = start_pytest(pytester, "--llm-keep-logs", "--llm-log-dir",
                        str(pytester.path / "logs"), *image_args)
    try:
        out = read_until(proc, "ready in", 900)
        deadline = time.monotonic() + 300
        while not record.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "no decode recorded"
            time.sleep(0.5)
        assert len(docker_ps() - before) == 1
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()

    seen = json.loads(record.read_text())
    assert len(seen["names"]) == 1 and seen["names"][0].startswith("pytest-rocm-llm-ctr-")
    assert seen["envs"] and all(seen["in_container"]), seen  # the engine runs in it
    assert all(env.get("PROBE_SEEN") == "seen-in-container" for env in seen["envs"])
    logs = "".join(p.read_text() for p in (pytester.path / "logs").glob("*.log"))
    assert "docker run" in logs and "-e PROBE_API_KEY" in logs
    assert SECRET not in out + logs
    assert wait_for(before, 90) == before
    assert not [p for p in psutil.process_iter() if "PROBE_SEEN" in _env(p)]


def _env(p: psutil.Process) -> dict[str, str]:
    try:
        return p.environ()
    except psutil.Error:
        return {}
