"""The versions that make a build, read from the build's own interpreter: a real Python with a
stand-in torch package on its path (neither a ROCm nor a CUDA torch can be installed here),
so the probe's own code runs as it does in an engine's image."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_rocm_llm.serving.build_versions import build_versions


@pytest.mark.parametrize(("hip", "cuda", "want"), [
    ("7.0.51831", None, {"rocm": "7.0.51831"}),
    (None, "12.8", {"cuda": "12.8"}),
])
def test_the_gpu_stack_of_the_builds_torch_is_recorded(tmp_path: Path, hip: str | None,
                                                       cuda: str | None, want: dict) -> None:
    torch = tmp_path / "site" / "torch"
    torch.mkdir(parents=True)
    (torch / "__init__.py").write_text("class version:\n"
                                       f"    hip = {hip!r}\n    cuda = {cuda!r}\n")
    python = tmp_path / "engine-python"
    python.write_text(f"#!/bin/sh\nPYTHONPATH={tmp_path / 'site'} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    got = build_versions((str(python),))
    assert {k: got[k] for k in ("rocm", "cuda") if k in got} == want
    assert "torch" not in got  # a package without metadata has no version to report
