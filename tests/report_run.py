"""One real run of the CPU reference, shared by the Allure report's tests
(tests/plugin/test_allure_report.py) and the planted-secret tests (tests/test_secret_nowhere.py).

Each used to start its own server for a run of its own (issue 20: server starts are most of the
test suite's time). The one run serves both questions: its profile carries a planted secret
(an ``api-key`` flag and an ``HF_TOKEN`` variable) that must reach the server and nothing the
run writes, and its checks fill the Allure report with a passing value, a rate sweep, a
deliberate performance regression and, with the server up, a failing test whose report quotes
the server's log tail and argv.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REFERENCE_CACHE, suite_head

KEY, TOKEN = "s3cr3t-XYZ-planted", "hf_PLANTEDtoken42"

# The planted variable goes in the default profile's table, after its flags.
SUITE = suite_head("report", {"default": {"api-key": KEY}}) + f"""\
env = {{ HF_TOKEN = "{TOKEN}" }}

[workloads.decode]
kind = "single_stream"
input_tokens = 32
output_tokens = 8
requests = 3

[workloads.sweep]
kind = "rate_sweep"
input_tokens = 32
output_tokens = 4
requests = 2
rates = [0.5, 1.0]
ttft_slo_s = 60
warmup = 0

[checks.speed]
workload = "decode"
metric = "output_speed_tok_s"
min = 0.01
source = "report test floor (a loaded 2-core machine decodes at ~0.1 tok/s)"

[checks.saturation]
workload = "sweep"
metric = "saturation_rate"
min = 0.5
source = "report test floor"

[checks.impossible]
workload = "decode"
metric = "output_speed_tok_s"
min = 1000000
source = "a floor no CPU reaches, so the report shows a regression"
"""

TESTS = {
    "test_report.py": "def test_check(llm_check, llm_judge):\n    llm_judge(llm_check)\n",
    # Fails while the server runs (after the checks, on the same server): the failure report,
    # the log-tail and argv attachments all come from a server that was up.
    "test_secret.py": ("def test_server_runs(llm_server):\n"
                       "    assert llm_server.process is not None\n"
                       "    raise AssertionError('deliberate failure with the server up')\n"),
}


def run(root: Path) -> subprocess.CompletedProcess[str]:
    """The suite above run in ``root`` (results, Allure files and kept server logs there)."""
    suite = root / "suites" / "report"
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text(SUITE)
    for name, body in TESTS.items():
        (suite / name).write_text(body)
    (root / "pytest.ini").write_text("[pytest]\n")
    # The client authenticates with the key from its environment, never from the profile.
    env = {**os.environ, "PYTEST_ROCM_LLM_CACHE": REFERENCE_CACHE,
           "PYTEST_ROCM_LLM_API_KEY": KEY}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--rocm-target", "cpu", "--alluredir", "allure",
         "--llm-results", "results.json", "--llm-log-dir", "logs", "--llm-keep-logs",
         "--llm-regen-all", "-p", "no:cacheprovider", "-rA", "suites"],
        cwd=root, env=env, capture_output=True, text=True, timeout=1500)
