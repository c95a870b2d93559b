"""``python -m pytest_rocm_llm.serving.reference.provision``: builds the CPU reference ahead of
a run (.ci/run does, beside its other set-up), in the cache a run would use."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pytest_rocm_llm.serving.reference.provision import main
from tests.conftest import REFERENCE_CACHE


def test_more_than_one_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["a", "b"]) == 2
    assert "usage: python -m pytest_rocm_llm.serving.reference.provision" in capsys.readouterr().out


@pytest.mark.engine
def test_a_built_reference_is_found_in_the_cache_a_run_uses(reference_model_dir) -> None:
    # reference_model_dir has built it (once per machine); the command finds it done, through
    # $PYTEST_ROCM_LLM_CACHE as a run would, and says where.
    env = {**os.environ, "PYTEST_ROCM_LLM_CACHE": REFERENCE_CACHE}
    proc = subprocess.run([sys.executable, "-m", "pytest_rocm_llm.serving.reference.provision"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"[rocm-llm] reference: ready in {REFERENCE_CACHE} (" in proc.stdout
