"""How much of a text we did not write (a server's error body, an event, a model's output)
goes into a message or a record: enough to act on, never a page of it."""

from __future__ import annotations

# A server's error message: its first lines name the problem; past that it is a traceback.
MESSAGE_CHARS = 300


def clip(text: str, limit: int = MESSAGE_CHARS) -> str:
    """The first ``limit`` characters of ``text``."""
    return text[:limit]


def quoted(text: str, limit: int) -> str:
    """``text`` as a Python literal, cut at ``limit`` characters with ``...`` when longer:
    a model's output in a finding, where quotes show its spaces and line breaks."""
    return repr(text if len(text) <= limit else text[:limit] + "...")
