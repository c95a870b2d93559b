"""CPU-reference images for the container tests (no registry is reachable here, so they are
built here): the smallest image that holds the CPU reference, an imported near-empty root (a
few directories; vfs copies every layer per container, so a real base image would cost GBs
per start) whose /usr, /etc and the engine environment's base interpreter are the host's,
bind-mounted read-only (--llm-container-arg); the engine environment, model and stub are
mounted by the plugin itself (cache directory, PYTHONPATH)."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

from tests.conftest import REFERENCE_CACHE


def docker_answers() -> bool:
    return shutil.which("docker") is not None and subprocess.run(
        ["docker", "info"], capture_output=True).returncode == 0


def _root_tar() -> bytes:
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
    return data.getvalue()


def ensure_image(tag: str) -> str:
    """``tag``, imported unless it exists. Each import is an image of its own (its own id),
    so two tags are two builds with the same software: an unchanged build."""
    if subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode:
        subprocess.run(["docker", "import", "-", tag], input=_root_tar(), check=True,
                       capture_output=True)
    return tag


def container_args() -> list[str]:
    """The --llm-container-arg options that give such an image the host's interpreter."""
    engine = next(Path(REFERENCE_CACHE, "engines").glob("sglang-*/pyvenv.cfg"))
    home = next(line.split("=", 1)[1].strip() for line in engine.read_text().splitlines()
                if line.startswith("home"))
    base = Path(home).resolve().parent  # the venv's base interpreter's prefix
    return ["--llm-container-arg=--volume=/usr:/usr:ro",
            "--llm-container-arg=--volume=/etc:/etc:ro",
            f"--llm-container-arg=--volume={base}:{base}:ro"]


def docker_ps() -> set[str]:
    out = subprocess.run(["docker", "ps", "-a", "-q", "--no-trunc"], capture_output=True,
                         text=True, check=True).stdout
    return set(out.split())
