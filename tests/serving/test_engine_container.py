"""Servers in containers (--llm-engine-image) with a real docker daemon and the real sglang
CPU reference: a decode, the profile's environment as the engine sees it, and nothing left
in `docker ps -a` after a normal end or after SIGKILL of pytest. Skipped where no docker
daemon answers.

The image is the smallest that holds the CPU reference: an imported near-empty root (a few
directories; vfs copies every layer per container, so a real base image would cost GBs per
start) whose /usr, /etc and the engine environment's base interpreter are the host's,
bind-mounted read-only (--llm-container-arg); the engine environment, model and stub are
mounted by the plugin itself (cache directory, PYTHONPATH).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import REFERENCE_CACHE, SMOKE_MODEL
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
import json, os, subprocess, psutil
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
    with open(os.environ["CTR_RECORD"], "w") as fh:
        json.dump({"envs": [p.environ() for p in engine], "names": names.split(),
                   "in_container": [str(p.pid) in top for p in engine]}, fh)
"""


def docker_ps() -> set[str]:
    out = subprocess.run(["docker", "ps", "-a", "-q", "--no-trunc"], capture_output=True,
                         text=True, check=True).stdout
    return set(out.split())


@pytest.fixture(scope="module")
def image_args(request: pytest.FixtureRequest) -> list[str]:
    """Options that run the CPU reference in IMAGE (built here when missing)."""
    if shutil.which("docker") is None or subprocess.run(
            ["docker", "info"], capture_output=True).returncode != 0:
        pytest.skip("no docker daemon reachable")
    request.getfixturevalue("reference_model_dir")  # only now: a skip builds nothing
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w") as tar:
            for name in ("usr", "etc", "root", "tmp", "proc", "sys", "dev", "sbin"):
                info = tarfile.TarInfo(name)
                info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755
                tar.addfile(info)
            for name in ("bin", "lib", "lib64"):  # merged /usr, as on the host
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, f"usr/{name}"
                tar.addfile(info)
        subprocess.run(["docker", "import", "-", IMAGE], input=data.getvalue(), check=True,
                       capture_output=True)
    engine = next(Path(REFERENCE_CACHE, "engines").glob("sglang-*/pyvenv.cfg"))
    home = next(line.split("=", 1)[1].strip() for line in engine.read_text().splitlines()
                if line.startswith("home"))
    base = Path(home).resolve().parent  # the venv's base interpreter's prefix
    return ["--llm-engine-image", IMAGE, "--llm-container-arg=--volume=/usr:/usr:ro",
            "--llm-container-arg=--volume=/etc:/etc:ro",
            f"--llm-container-arg=--volume={base}:{base}:ro"]


def wait_for(expected: set[str], timeout: float) -> set[str]:
    deadline = time.monotonic() + timeout
    while (now := docker_ps()) != expected and time.monotonic() < deadline:
        time.sleep(1)
    return now


def test_a_server_in_a_container_decodes_sees_its_env_and_leaves_nothing(
        pytester: pytest.Pytester, suite_dir, engine_env, image_args, monkeypatch) -> None:
    before = docker_ps()
    record = pytester.path / "record.json"
    monkeypatch.setenv("CTR_RECORD", str(record))
    suite_dir(SUITE, {"test_ctr.py": DECODE}, name="ctr")
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", "-s", "--llm-keep-logs",
                                           "--llm-log-dir", str(pytester.path / "logs"),
                                           *image_args, timeout=900)
    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)

    seen = json.loads(record.read_text())
    assert len(seen["names"]) == 1 and seen["names"][0].startswith("pytest-rocm-llm-ctr-")
    assert seen["envs"] and all(seen["in_container"]), seen  # the engine runs in it
    assert all(env.get("PROBE_SEEN") == "seen-in-container" for env in seen["envs"])
    logs = "".join(p.read_text() for p in (pytester.path / "logs").glob("*.log"))
    assert "docker run" in logs and "-e PROBE_API_KEY" in logs
    assert SECRET not in out + logs
    assert docker_ps() == before
    assert not [p for p in psutil.process_iter() if "PROBE_SEEN" in _env(p)]


def _env(p: psutil.Process) -> dict[str, str]:
    try:
        return p.environ()
    except psutil.Error:
        return {}


def test_a_killed_pytest_leaves_no_container(pytester: pytest.Pytester, suite_dir,
                                             engine_env, image_args) -> None:
    """SIGKILL gives pytest no chance to stop anything, and killing the runtime's client
    would not stop the container anyway: the guardian removes it."""
    before = docker_ps()
    suite_dir(SUITE, {"test_ctr.py": "import time\n"
                                     "def test_a(llm_server): time.sleep(600)\n"}, name="ctr")
    proc = start_pytest(pytester, *image_args)
    try:
        read_until(proc, "ready in", 900)
        assert len(docker_ps() - before) == 1
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert wait_for(before, 90) == before
