"""Progress lines that show live, even with output captured or piped (CI logs).

The domain modules log their progress (``pytest_rocm_llm.progress_log``); while a pytest
session is configured, one handler on the package's logger writes those records through
``progress_writer`` to pytest's terminal. Registered as a plugin (``-p
pytest_rocm_llm.plugin.progress``, or ``import_plugin`` from the plugin's ``pytest_configure``)
it installs itself for the session and removes itself at the end. With pytest's own live
logging on (``log_cli``), pytest already shows the records as they come, so this handler
stays out of the way rather than print each line twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from pytest_rocm_llm.progress_log import FORMAT, LOGGER, enable


def progress_writer(config: pytest.Config) -> Callable[[str], None]:
    def write(message: str) -> None:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        capman = config.pluginmanager.get_plugin("capturemanager")
        if tr is None:
            print(message, flush=True)
            return
        if capman is not None:
            with capman.global_and_fixture_disabled():
                tr.write_line(message)
                tr.flush()
        else:
            tr.write_line(message)
            tr.flush()

    return write


class _TerminalHandler(logging.Handler):
    """Writes each record to the terminal of the innermost configured session: a pytester
    run inside a test session shows its lines in its own output, not the outer one's."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(logging.Formatter(FORMAT))
        self.sessions: list[tuple[pytest.Config, Callable[[str], None]]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not self.sessions:
            return
        try:
            self.sessions[-1][1](self.format(record))
        except Exception:
            self.handleError(record)


_HANDLER = _TerminalHandler()


def _live_logging(config: pytest.Config) -> bool:
    return bool(config.getoption("--log-cli-level", None) is not None
                or config.getini("log_cli")) and (
        config.pluginmanager.get_plugin("terminalreporter") is not None)


def install(config: pytest.Config) -> None:
    """Show the package's progress records live in ``config``'s terminal."""
    enable()
    if _live_logging(config) or any(c is config for c, _ in _HANDLER.sessions):
        return
    _HANDLER.sessions.append((config, progress_writer(config)))
    logger = logging.getLogger(LOGGER)
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)


def uninstall(config: pytest.Config) -> None:
    _HANDLER.sessions[:] = [(c, w) for c, w in _HANDLER.sessions if c is not config]
    if not _HANDLER.sessions:
        logging.getLogger(LOGGER).removeHandler(_HANDLER)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    install(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    uninstall(config)
