"""A secret planted in a suite profile (an ``api-key`` flag and an ``HF_TOKEN`` environment
variable) reaches the real server that needs it, and nothing the run prints or stores: the
terminal output, the results file, the Allure report (attachments included), the server log's
argv header and the failure messages quoting its tail. One real run of the CPU reference,
shared with the Allure report's tests (tests/report_run.py, the ``report_run`` fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.report_run import KEY, TOKEN

pytestmark = pytest.mark.engine


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


def test_the_planted_secret_reached_the_server_and_nothing_we_wrote(report_run) -> None:
    root, proc = report_run
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


def test_a_server_started_with_an_api_key_serves_the_suite(report_run) -> None:
    # With the test body reached, the failure report and the Allure attachments above quote
    # a server that was up, not only one that failed to become usable.
    _, proc = report_run
    out = proc.stdout + proc.stderr
    assert "deliberate failure with the server up" in out, out[-6000:]
