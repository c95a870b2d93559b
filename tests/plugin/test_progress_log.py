"""Progress lines go through stdlib logging: a domain module logs, and the plugin layer shows
the record live in pytest's terminal with output captured, as the old writer callbacks did."""

from __future__ import annotations

import io
import logging
import textwrap

import pytest

from pytest_rocm_llm.progress_log import LOGGER, log_to_stderr
from tests.serving.test_server_process import OK_SERVER

STANDIN = "import http.server, sys\n\n" + OK_SERVER

# A test that starts and stops a real (tiny) server through the production ServerProcess,
# which logs its progress instead of calling a writer.
INNER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pytest_rocm_llm.serving.ports import claim_port, release_port
    from pytest_rocm_llm.serving.process import LaunchSpec, ServerProcess

    def test_serve(tmp_path):
        port = claim_port()
        try:
            spec = LaunchSpec(name="demo/live", argv=(sys.executable, {script!r}, str(port)),
                              env={{}}, host="127.0.0.1", port=port, health_path="/",
                              log_path=tmp_path / "server.log", start_timeout_s=30)
            with ServerProcess(spec):
                print("captured, never shown for a passing test")
        finally:
            release_port(port)
    """)


def inner_suite(pytester: pytest.Pytester) -> None:
    script = pytester.path / "standin.py"
    script.write_text(STANDIN)
    pytester.makepyfile(test_inner=INNER.format(script=str(script)))


def test_a_domain_modules_progress_shows_live_in_the_terminal(
        pytester: pytest.Pytester) -> None:
    inner_suite(pytester)
    result = pytester.runpytest("-v", "-p", "pytest_rocm_llm.plugin.progress",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    lines = result.stdout.lines
    loading = next(i for i, ln in enumerate(lines)
                   if ln.startswith("[rocm-llm] demo/live: loading server at http://127.0.0.1:"))
    ready = next(i for i, ln in enumerate(lines)
                 if ln.startswith("[rocm-llm] demo/live: ready in "))
    passed = next(i for i, ln in enumerate(lines) if "PASSED" in ln)
    # Live: written while the test ran (before its outcome), not kept for a failure report.
    assert loading < ready < passed
    assert "captured, never shown" not in result.stdout.str()
    assert result.stdout.str().count("demo/live: ready in") == 1


def test_with_pytests_live_logging_each_line_shows_once(pytester: pytest.Pytester) -> None:
    inner_suite(pytester)
    result = pytester.runpytest("-p", "pytest_rocm_llm.plugin.progress", "-p",
                                "no:cacheprovider", "--log-cli-level=INFO")
    result.assert_outcomes(passed=1)
    assert result.stdout.str().count("demo/live: ready in") == 1


def test_the_handler_is_gone_after_the_session(pytester: pytest.Pytester) -> None:
    from pytest_rocm_llm.plugin.progress import _HANDLER

    before = list(logging.getLogger(LOGGER).handlers)
    inner_suite(pytester)
    pytester.runpytest("-p", "pytest_rocm_llm.plugin.progress", "-p", "no:cacheprovider")
    assert logging.getLogger(LOGGER).handlers == before
    assert all(c.rootpath != pytester.path for c, _ in _HANDLER.sessions)


def test_without_pytest_progress_goes_to_stderr() -> None:
    stream = io.StringIO()
    handler = log_to_stderr(stream)
    try:
        logging.getLogger("pytest_rocm_llm.serving.process").info("demo: ready in 1.0 s")
    finally:
        logging.getLogger(LOGGER).removeHandler(handler)
    assert stream.getvalue() == "[rocm-llm] demo: ready in 1.0 s\n"
