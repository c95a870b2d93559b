"""Progress lines through stdlib logging. No pytest in here.

Domain modules log progress with ``logging.getLogger(__name__)``, so every record is under the
package's logger (``pytest_rocm_llm``). Where it shows is the caller's choice: the plugin layer
writes the records live to pytest's terminal (``plugin/progress.py``), a command-line entry
point to stderr (``log_to_stderr``), and ordinary logging configuration (pytest's
``--log-file``, a user's handlers) sees them like any library's. The ``[rocm-llm]`` prefix is
the formatter's, so messages are written without it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TextIO

LOGGER = "pytest_rocm_llm"
PREFIX = "[rocm-llm] "
FORMAT = PREFIX + "%(message)s"

Progress = Callable[[str], None]


def report(logger: logging.Logger, message: str, callback: Progress | None = None,
           level: int = logging.INFO) -> None:
    """Log one progress line. A caller that still hands a ``progress`` callback to a domain
    class gets the line (prefixed) through it instead, as before logging, and only there,
    so the line is never shown twice."""
    if callback is not None:
        callback(PREFIX + message)
    else:
        logger.log(level, message)


def progress_to(logger: logging.Logger, callback: Progress | None = None) -> Progress:
    """The progress callable a domain object hands down to what it runs: the caller's
    callback when one was given, else one that logs each line (its ``[rocm-llm]`` prefix
    dropped, the formatter adds it) as an INFO record of ``logger``."""
    if callback is not None:
        return callback

    def emit(message: str) -> None:
        logger.info(message.removeprefix(PREFIX))

    return emit


def enable(level: int = logging.INFO) -> None:
    """Let the package's progress records through (the root logger's default is WARNING)."""
    logger = logging.getLogger(LOGGER)
    if logger.level == logging.NOTSET or logger.level > level:
        logger.setLevel(level)


def log_to_stderr(stream: TextIO | None = None, level: int = logging.INFO) -> logging.Handler:
    """Show progress records on ``stream`` (stderr): for entry points that run without
    pytest, such as ``python -m pytest_rocm_llm.performance``."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.setLevel(level)
    logging.getLogger(LOGGER).addHandler(handler)
    enable(level)
    return handler
