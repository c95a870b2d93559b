"""What the plugin asks of a container runtime (serving/container.py), checked against a
stand-in for its command line (tests/stand_ins/container_runtime.py: no daemon needed).
The real thing, with docker and the sglang CPU reference: test_engine_container.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from pytest_rocm_llm.config.builds import INCUMBENT, Build
from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.serving import container, guardian
from pytest_rocm_llm.serving.parking import park
from pytest_rocm_llm.serving.process import LaunchSpec

# The stand-in runtime's executable: the ``runtime`` fixture (tests/conftest.py).


def state() -> dict[str, dict[str, str]]:
    path = Path(os.environ["FAKE_RUNTIME_STATE"])
    return json.loads(path.read_text()) if path.exists() else {}


def set_state(containers: dict[str, dict[str, str]]) -> None:
    Path(os.environ["FAKE_RUNTIME_STATE"]).write_text(json.dumps(containers))


def calls() -> list[list[str]]:
    log = Path(os.environ["FAKE_RUNTIME_STATE"] + ".log")
    return [json.loads(line) for line in log.read_text().splitlines()]


def settings(**kw: object) -> Settings:
    return Settings(target=TARGETS["cpu"], endpoint=None, engine_prefix=None, model_path=None,
                    start_timeout_s=60.0, keep_logs=False, log_dir=None, host="127.0.0.1",
                    cache_dir=Path("/cache"), container_runtime="docker", **kw)  # type: ignore[arg-type]


def test_the_run_prefix_gives_the_targets_options_and_env_names_only() -> None:
    build = Build(INCUMBENT, image="img:1")
    s = settings(container_args=("--volume=/usr:/usr:ro",))
    cpu = container.run_prefix(s, TARGETS["cpu"], build, ["B", "A", "B"], ["/m", "/m/", "/c"])
    assert cpu == ("docker", "run", "--rm", "--init", "--network", "host", "-v", "/m:/m",
                   "-v", "/c:/c", "-e", "A", "-e", "B", "--volume=/usr:/usr:ro", "img:1")
    gpu = " ".join(container.run_prefix(s, TARGETS["mi355x"], build, [], []))
    for option in ("--device /dev/kfd", "--device /dev/dri", "--group-add video",
                   "--ipc host", "--shm-size 16g", "--network host",
                   "--security-opt seccomp=unconfined"):
        assert option in gpu
    # a relative directory (the plan's log directory is ".") is mounted by its absolute path
    rel = container.run_prefix(s, TARGETS["cpu"], build, [], ["."])
    assert rel[rel.index("-v") + 1] == f"{Path.cwd()}:{Path.cwd()}"
    # the hardware check's exec part: the same container, before rocminfo
    assert container.exec_part(s, TARGETS["mi355x"], build)[-1] == "img:1"


def spec(tmp_path: Path, argv: tuple[str, ...]) -> LaunchSpec:
    return LaunchSpec(name="s/p", argv=argv, env={}, host="127.0.0.1", port=1,
                      health_path="/health", log_path=tmp_path / "s.log", start_timeout_s=5)


def start(tmp_path: Path, runtime: str) -> container.ContainerServer:
    argv = (runtime, "run", "--rm", "img", "python3", "-m", "sglang.launch_server")
    server = container.ContainerServer(spec(tmp_path, argv),
                                       {"suite": "s", "profile": "p", "build": "incumbent"})
    server.start()
    deadline = time.monotonic() + 10
    while server.container not in state():
        assert time.monotonic() < deadline, "the stand-in runtime never ran the container"
        time.sleep(0.02)
    return server


def test_a_server_container_is_named_labelled_stopped_then_removed(
        tmp_path: Path, runtime: str) -> None:
    server = start(tmp_path, runtime)
    try:
        run = next(c for c in calls() if c[0] == "run")
        assert run[run.index("--name") + 1] == server.container
        assert f"--name {server.container} " in (tmp_path / "s.log").read_text()
        labels = state()[server.container]
        assert labels == {"owner-pid": str(os.getpid()), "host": socket.gethostname(),
                          "run": container.RUN_ID, "suite": "s", "profile": "p",
                          "build": "incumbent"}
        assert not park(server)  # SIGSTOP would reach the runtime's client only
    finally:
        code = server.stop(grace_s=3)
    assert [c[:3] for c in calls()[1:]] == [["stop", "-t", "3"], ["rm", "-f",
                                                                          server.container],
                                                   ["ps", "-a", "--format"]]
    assert code == 0 and state() == {} and server.leaks == []


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_the_guardian_removes_the_container_of_a_dead_owner(
        runtime: str, monkeypatch: pytest.MonkeyPatch) -> None:
    set_state({"c1": {}, "c2": {}})
    monkeypatch.setattr(guardian.signal, "signal", lambda *a: None)  # this is pytest itself
    guardian.main_container(dead_pid(), runtime, "c1")
    assert state() == {"c2": {}}
    # what a server's start runs as its guardian (ServerProcess.start)
    server = container.ContainerServer(spec(Path("/l"), (runtime, "run", "img")), {})
    assert server._guardian_argv()[-3:] == ["container", runtime, server.container]


def test_a_session_removes_only_this_hosts_containers_of_dead_runs(runtime: str) -> None:
    host, dead = socket.gethostname(), str(dead_pid())
    set_state({
        "dead-here": {"owner-pid": dead, "host": host},
        "alive-here": {"owner-pid": str(os.getpid()), "host": host},
        "dead-elsewhere": {"owner-pid": dead, "host": "another-node"}})
    assert container.reap_dead_runs(runtime) == ["dead-here"]
    assert set(state()) == {"alive-here", "dead-elsewhere"}


def test_a_builds_image_is_identified_by_id_and_digest(runtime: str) -> None:
    assert container.image_identity(runtime, "rocm/sgl-dev:v1") == {
        "image": "rocm/sgl-dev:v1", "image_id": "sha256:1d",
        "image_digests": "rocm/sgl-dev@sha256:d1"}
