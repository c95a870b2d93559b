"""A server that cannot be set up says why in one line: its port already taken, the model
path missing, the engine environment missing or lacking the engine."""

from __future__ import annotations

import socket
import sys

import pytest

from tests.conftest import SMOKE_MODEL

SUITE = f"""
[suite]
name = "setup"
{SMOKE_MODEL}
path_env = "FAULT_MODEL_DIR"
[profiles.default]
"""

ONE_TEST = {"test_x.py": "def test_x(llm_server): pass\n"}

# Fault injection: the plugin claims a free port itself, so "taken" only happens when another
# process binds it between the claim and the launch; this seam makes that race certain.
TAKE_PORT = """
import os
import pytest_rocm_llm.serving.pool as pool
pool.claim_port = lambda host="127.0.0.1", attempts=200: int(os.environ["FAULT_TAKEN_PORT"])
"""


def one_line(out: str, message: str) -> None:
    """``message`` is on one line of the output, and no traceback came with it."""
    assert any(message in line for line in out.splitlines()), out
    assert "Traceback" not in out and 'File "' not in out, out


@pytest.mark.engine
def test_port_already_taken(pytester: pytest.Pytester, suite_dir, engine_env, monkeypatch,
                            fault) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        monkeypatch.setenv("FAULT_TAKEN_PORT", str(port))
        suite_dir(SUITE.replace('path_env = "FAULT_MODEL_DIR"\n', ""),
                  {**ONE_TEST, "conftest.py": TAKE_PORT}, name="setup")
        result = pytester.runpytest_subprocess("--rocm-target", "cpu", "-p", "no:cacheprovider",
                                               timeout=300)
    out = result.stdout.str()
    result.assert_outcomes(errors=1)
    one_line(out, f"infrastructure: setup/default: port {port} on 127.0.0.1 is already in use "
                  "by another process")
    assert "loading server" not in out
    fault.ports.add(port)
    fault.assert_no_leak(within_s=10)


@pytest.mark.engine  # needs the CPU reference environment (no server is launched)
def test_model_path_missing(pytester: pytest.Pytester, suite_dir, engine_env, monkeypatch,
                            fault) -> None:
    suite_dir(SUITE, ONE_TEST, name="setup")
    missing = pytester.path / "no-such-model"
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", "-p", "no:cacheprovider",
                                           "--llm-model-path", str(missing), timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    one_line(result.stderr.str(), f"--llm-model-path: invalid value '{missing}'; expected an "
                                  "existing model directory")
    # the suite's own path variable pointing nowhere: the run stops before any test or
    # server (the reference is prepared up front since the builds run side by side), naming it
    monkeypatch.setenv("FAULT_MODEL_DIR", str(missing))
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", "-p", "no:cacheprovider",
                                           timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    one_line(result.stderr.str(), f"$FAULT_MODEL_DIR={missing} is not a directory "
                                  "(suite setup, model HuggingFaceTB/SmolLM2-135M-Instruct)")
    fault.assert_no_leak(within_s=5)


def test_engine_environment_missing(pytester: pytest.Pytester, suite_dir, fault) -> None:
    suite_dir(SUITE, ONE_TEST, name="setup")
    gone = pytester.path / "venv" / "bin" / "python"
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", "-p", "no:cacheprovider",
                                           "--llm-engine-python", str(gone), timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    one_line(result.stderr.str(), f"--llm-engine-python: invalid value '{gone}'; expected the "
                                  "path of an executable Python in the engine's environment")
    # an interpreter that exists but has no engine: named, with the fix
    result = pytester.runpytest_subprocess(
        "--rocm-target", "cpu", "-p", "no:cacheprovider", "--llm-engine-python", sys.executable,
        "--llm-model-path", str(pytester.path), timeout=120)
    result.assert_outcomes(errors=1)
    one_line(result.stdout.str(), f"infrastructure: sglang is not importable by "
                                  f"{sys.executable}: ModuleNotFoundError: No module named "
                                  "'sglang'; point "
                                  "--llm-engine-python or --llm-engine-cmd at the sglang "
                                  "environment")
    fault.assert_no_leak(within_s=5)
