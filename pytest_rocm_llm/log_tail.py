"""The last lines of a log or of a command's output, as every failure message quotes them:
one function, one default length. No pytest in here."""

from __future__ import annotations

import collections
from collections.abc import Iterable
from pathlib import Path

from pytest_rocm_llm.redact import redact_text

# Enough for a Python traceback and the engine's last log lines before it, short enough for a
# failure message to stay readable in a terminal.
TAIL_LINES = 50


def text_tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of ``text``."""
    return "\n".join(text.rstrip("\n").splitlines()[-lines:]) if lines > 0 else ""


def file_tail(path: Path, lines: int = TAIL_LINES, secrets: Iterable[str] = ()) -> str:
    """The last ``lines`` lines of the file at ``path`` with ``secrets`` masked; "" when it
    cannot be read. Reads the file once, keeping only the tail (server logs grow large)."""
    if lines <= 0:
        return ""
    try:
        with open(path, errors="replace") as fh:
            tail = "".join(collections.deque(fh, maxlen=lines)).rstrip("\n")
    except OSError:
        return ""
    return redact_text(tail, secrets)
