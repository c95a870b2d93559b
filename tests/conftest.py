from __future__ import annotations

import os
from pathlib import Path

import httpcore  # noqa: F401
import httpx  # noqa: F401
import pytest
from hypothesis import settings

# In-process pytester runs drop from sys.modules whatever they imported first; httpx then
# keeps exception maps that point at a dropped httpcore, and connection errors escape
# unmapped. Importing the HTTP stack and the plugin's modules here keeps them loaded once.
import pytest_rocm_llm.client.generate  # noqa: E402,F401
import pytest_rocm_llm.performance.runs  # noqa: E402,F401
import pytest_rocm_llm.serving.process  # noqa: E402,F401

# The machines are shared and noisy: no per-example deadline; in CI, a fixed example
# sequence so a red run is reproducible.
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ROOT = Path(__file__).resolve().parent.parent
# Resolved at import, before pytester points HOME at a temporary directory: pytester runs
# must share the machine's reference cache instead of provisioning their own.
REFERENCE_CACHE = str(
    Path(os.environ.get("PYTEST_ROCM_LLM_CACHE") or "~/.cache/pytest-rocm-llm").expanduser())

SMOKE_MODEL = """
[model]
id = "HuggingFaceTB/SmolLM2-135M-Instruct"
served_name = "smollm2-135m-instruct"
reference = "smollm2-135m-instruct"
"""


@pytest.fixture
def suite_dir(pytester: pytest.Pytester):
    """Write a suite (suite.toml + test modules) into pytester's directory."""

    def make(toml: str, tests: dict[str, str] | None = None, name: str = "demo") -> Path:
        d = pytester.path / "suites" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "suite.toml").write_text(toml)
        for fname, body in (tests or {}).items():
            (d / fname).write_text(body)
        return d

    return make


@pytest.fixture
def engine_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment for pytester runs that launch the real CPU reference: the shared cache
    (so the engine environment and model are built once per machine)."""
    env = {"PYTEST_ROCM_LLM_CACHE": REFERENCE_CACHE}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture(scope="session")
def reference_model_dir() -> Path:
    """The CPU reference model directory, built once per machine if missing."""
    from pytest_rocm_llm.serving.reference.provision import ensure_reference

    return ensure_reference(Path(REFERENCE_CACHE), "smollm2-135m-instruct").model_dir


@pytest.fixture(scope="session")
def reference_vocab(reference_model_dir: Path):
    from pytest_rocm_llm.performance.prompts import load_vocabulary

    return load_vocabulary(str(reference_model_dir))


def reference_launch_spec(name: str, model_dir: Path, port: int, log_path: Path):
    """The CPU target's sglang launch of the reference model on loopback ``port``."""
    from pytest_rocm_llm.config.targets import TARGETS
    from pytest_rocm_llm.serving.engines import get_engine
    from pytest_rocm_llm.serving.process import LaunchSpec
    from pytest_rocm_llm.serving.reference.provision import STUBS, ensure_engine

    python = ensure_engine(Path(REFERENCE_CACHE))
    target = TARGETS["cpu"]
    engine = get_engine("sglang")
    argv = engine.launch_argv((str(python),), str(model_dir), "smollm2-135m-instruct",
                              "127.0.0.1", port, dict(target.engine_flags["sglang"]))
    return LaunchSpec(
        name=name, argv=tuple(argv), env={**target.env, "PYTHONPATH": str(STUBS)},
        host="127.0.0.1", port=port, health_path=engine.health_path, log_path=log_path,
        start_timeout_s=900)


@pytest.fixture(scope="module")
def cpu_server(reference_model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """One real CPU sglang server for a module whose pytester runs attach to it
    (--llm-endpoint), so each run costs its requests, not a server start."""
    from pytest_rocm_llm.serving.ports import claim_port, release_port
    from pytest_rocm_llm.serving.process import ServerProcess

    port = claim_port("127.0.0.1")
    spec = reference_launch_spec("tests/cpu_server", reference_model_dir, port,
                                 tmp_path_factory.mktemp("cpu_server") / "server.log")
    try:
        with ServerProcess(spec) as proc:
            yield proc.base_url
    finally:
        release_port(port)
