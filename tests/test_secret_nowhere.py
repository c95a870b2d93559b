"""A secret planted in a suite profile (an ``api-key`` flag and an ``HF_TOKEN`` environment
variable) reaches the real server that needs it, and nothing the run prints or stores: the
terminal output, the results file, the Allure report (attachments included), the server log's
argv header and the failure messages quoting its tail. One real run of the CPU reference."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REFERENCE_CACHE, SMOKE_MODEL

pytestmark = pytest.mark.engine

KEY, TOKEN = "s3cr3t-XYZ-planted", "hf_PLANTEDtoken42"

SUITE = f"""
[suite]
name = "secret"
{SMOKE_MODEL}
[profiles.default]
flags = {{ "api-key" = "{KEY}" }}
env = {{ HF_TOKEN = "{TOKEN}" }}

[workloads.decode]
kind = "single_stream"
input_tokens = 16
output_tokens = 4
requests = 2

[checks.impossible]
workload = "decode"
metric = "output_speed_tok_s"
min = 1000000
source = "fails on purpose: its message and attachments quote the server"
"""

# A test that fails while the server runs: the failure report, the log-tail and argv
# attachments all come from this server.
TESTS = """
def test_server_runs(llm_server):
    assert llm_server.process is not None
    raise AssertionError("deliberate failure with the server up")
"""


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory: pytest.TempPathFactory, reference_model_dir):
    root = tmp_path_factory.mktemp("secret-run")
    (root / "suites" / "secret").mkdir(parents=True)
    (root / "suites" / "secret" / "suite.toml").write_text(SUITE)
    (root / "suites" / "secret" / "test_secret.py").write_text(TESTS)
    (root / "pytest.ini").write_text("[pytest]\n")
    # The client authenticates with the key from its environment, never from the profile.
    env = {**os.environ, "PYTEST_ROCM_LLM_CACHE": REFERENCE_CACHE,
           "PYTEST_ROCM_LLM_API_KEY": KEY}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--rocm-target", "cpu", "--alluredir", "allure",
         "--llm-results", "results.json", "--llm-log-dir", "logs", "--llm-keep-logs",
         "--llm-regen-all", "-p", "no:cacheprovider", "-rA", "suites"],
        cwd=root, env=env, capture_output=True, text=True, timeout=1500)
    return root, proc


def found_in(root: Path, text: str) -> list[str]:
    """Where the secret shows: the output, any file under ``root`` but the suite (where it
    was planted) and the server logs' bodies (the engine's own words, masked whenever we
    quote them)."""
    where = ["output"] if KEY in text or TOKEN in text else []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.relative_to(root).parts[0] not in ("logs", "suites"):
            data = path.read_bytes()
            if KEY.encode() in data or TOKEN.encode() in data:
                where.append(str(path.relative_to(root)))
    return where


def test_the_planted_secret_reached_the_server_and_nothing_we_wrote(planted_run) -> None:
    root, proc = planted_run
    out = proc.stdout + proc.stderr
    logs = sorted((root / "logs").rglob("*.log"))
    assert logs, out[-3000:]
    log = logs[0].read_text(errors="replace")
    header, body = log.split("\n", 1)
    # The server really ran with them: sglang echoes its server_args (api_key included).
    assert KEY in body, body[-2000:]
    for each in logs:
        head = each.read_text(errors="replace").split("\n", 1)[0]
        assert head.startswith("$ ") and KEY not in head and TOKEN not in head
    assert "--api-key ***" in header
    assert (root / "results.json").is_file() and any((root / "allure").iterdir())
    assert found_in(root, out) == []


def test_a_server_started_with_an_api_key_serves_the_suite(planted_run) -> None:
    # With the test body reached, the failure report and the Allure attachments above quote
    # a server that was up, not only one that failed to become usable.
    _, proc = planted_run
    out = proc.stdout + proc.stderr
    assert "deliberate failure with the server up" in out, out[-6000:]
