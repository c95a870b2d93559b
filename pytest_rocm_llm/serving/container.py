"""A server in a container of its own (``--llm-engine-image``): the variant of the native
launch (``process.ServerProcess``) for a node where the engine ships as an image. No pytest.

One container per server, run attached: the runtime's client is the process the pool
watches, and its output (the engine's, followed by the runtime) is the server log. The
container is named and labelled (owner pid, host, run, suite, profile, build), gets the
target's devices and options (``Target.container_args``), the model, cache and log
directories at the same paths, and the server's environment by NAME only (``-e KEY``: the
runtime reads each value from the client's environment, so no value is ever on a command
line or in a log). Stop = the runtime's stop with a grace period, then removal, then a check
that the container is gone (a container that stays is a reported leak). Killing the client
never stops a container (docker/cli#5309), so a guardian removes it if pytest dies, and
containers labelled by a dead owner on this host are removed when a session starts.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from pytest_rocm_llm.config.builds import Build
from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.targets import Target
from pytest_rocm_llm.serving.guardian import alive, remove
from pytest_rocm_llm.serving.process import LaunchSpec, ServerProcess
from pytest_rocm_llm.serving.process_tree import Leak

LABEL = "pytest-rocm-llm"  # label keys are LABEL + "." + what
# One id per pytest process, so labels tell this run's containers from an earlier one's.
RUN_ID = f"{os.getpid()}-{int(time.time())}"


def run_prefix(settings: Settings, target: Target, build: Build, env_keys: Iterable[str],
               mounts: Iterable[str]) -> tuple[str, ...]:
    """``RUNTIME run --rm ... IMAGE``: what runs a command in a fresh container of the build
    (the flag check, the version probe, the hardware check; a server adds its name and
    labels). ``mounts``: host paths mounted at the same path."""
    assert build.image is not None and settings.container_runtime is not None
    volumes: list[str] = []
    for path in dict.fromkeys(str(Path(m).resolve()) for m in mounts if m):
        volumes += ["-v", f"{path}:{path}"]
    env = [w for k in sorted(set(env_keys)) for w in ("-e", k)]
    # --init: a real PID 1 that passes the runtime's SIGTERM on and reaps the engine's
    # workers; the engine as PID 1 would ignore SIGTERM and be killed only after the grace.
    return (settings.container_runtime, "run", "--rm", "--init", *target.container_args,
            *volumes, *env, *settings.container_args, build.image)


def exec_part(settings: Settings, target: Target, build: Build) -> tuple[str, ...]:
    """What runs a tool (rocminfo, amd-smi) where the build's engine runs."""
    if build.image is None:
        return build.exec_part
    return run_prefix(settings, target, build, (), ())


def _name(labels: Mapping[str, str]) -> str:
    text = "-".join([LABEL, labels.get("suite", ""), labels.get("profile", ""),
                     labels.get("build", ""), labels.get("port", ""), RUN_ID])
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


class ContainerServer(ServerProcess):
    """A ServerProcess whose argv starts with ``run_prefix``: the container is named and
    labelled at start, and stopped and removed through the runtime."""

    parkable = False  # SIGSTOP would reach the runtime's client, not the engine

    def __init__(self, spec: LaunchSpec, labels: Mapping[str, str],
                 progress: Callable[[str], None] | None = None) -> None:
        super().__init__(spec, progress)
        self.runtime = spec.argv[0]
        self.labels = {"owner-pid": str(os.getpid()), "host": socket.gethostname(),
                       "run": RUN_ID, **labels}
        self.container = _name({**self.labels, "port": str(spec.port)})

    def _popen_argv(self) -> list[str]:
        argv = list(self.spec.argv)
        assert argv[1] == "run", argv
        own = ["--name", self.container]
        for key, value in self.labels.items():
            own += ["--label", f"{LABEL}.{key}={value}"]
        return argv[:2] + own + argv[2:]

    def _guardian_argv(self) -> list[str]:
        return [sys.executable, "-m", "pytest_rocm_llm.serving.guardian", str(os.getpid()),
                "container", self.runtime, self.container]

    def stop(self, grace_s: float = 20.0) -> int | None:
        proc, _ = self._release()
        if proc is None:
            return None
        remove(self.runtime, self.container, grace_s)
        try:
            code = proc.wait(timeout=grace_s + 30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        left = present(self.runtime, [self.container])
        self.leaks = [Leak(0, f"container {name} of {self.runtime}") for name in left]
        if self.leaks:
            self._say(f"{self.spec.name}: container {self.container} is still there after "
                      f"its stop and removal; remove it with `{self.runtime} rm -f "
                      f"{self.container}`", logging.WARNING)
        return code


def _run(argv: list[str], timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                          stdin=subprocess.DEVNULL, check=False)


def present(runtime: str, names: Iterable[str]) -> list[str]:
    """Which of the named containers exist (running or not)."""
    try:
        out = _run([runtime, "ps", "-a", "--format", "{{.Names}}"]).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    existing = set(out.split())
    return [n for n in names if n in existing]


@functools.cache
def image_identity(runtime: str, image: str) -> dict[str, str]:
    """The image a build ran as the runtime knows it: name, id and registry digests (empty
    values left out: a locally built image has no digest)."""
    try:
        out = _run([runtime, "image", "inspect", "--format",
                    "{{.Id}} {{json .RepoDigests}}", image]).stdout
        image_id, _, digests = out.strip().partition(" ")
        repo_digests = json.loads(digests) or []
    except (OSError, subprocess.TimeoutExpired, ValueError):
        image_id, repo_digests = "", []
    found = {"image": image, "image_id": image_id, "image_digests": ",".join(repo_digests)}
    return {k: v for k, v in found.items() if v}


def reap_dead_runs(runtime: str) -> list[str]:
    """Remove this host's containers whose owning pytest process is gone (it was SIGKILLed
    along with its guardian, or the node rebooted mid-run); returns their names."""
    try:
        ids = _run([runtime, "ps", "-a", "-q", "--filter", f"label={LABEL}.owner-pid"]).stdout
        if not ids.split():
            return []
        fmt = (f'{{{{.Name}}}} {{{{index .Config.Labels "{LABEL}.owner-pid"}}}} '
               f'{{{{index .Config.Labels "{LABEL}.host"}}}}')
        out = _run([runtime, "inspect", "--format", fmt, *ids.split()]).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    host = socket.gethostname()
    dead = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == host and parts[1].isdigit() \
                and not alive(int(parts[1])):
            dead.append(parts[0].lstrip("/"))
    for name in dead:
        remove(runtime, name, 5.0)
    return dead
