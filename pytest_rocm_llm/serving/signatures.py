"""Known failure signatures in server logs: what broke, in words an engineer can act on.

The signatures are data (``signatures.toml``, extended by the user's own file); each is a
regex matched per log line. A server that crashes, or a check that fails, reports the
signatures its server's log shows.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field

from pytest_rocm_llm.config.fields import matches, one_of
from pytest_rocm_llm.config.toml import Table, TomlTable, problem, validate
from pytest_rocm_llm.errors import ConfigError

BUILTIN = Path(__file__).with_name("signatures.toml")
SEVERITIES = ("error", "warning")


@dataclass(frozen=True)
class Signature:
    id: str
    title: str
    pattern: re.Pattern[str]
    severity: str
    advice: str
    source: str = ""  # the public issue or PR the failure was reported in


@dataclass(frozen=True)
class Hit:
    signature: Signature
    line_no: int
    line: str

    def describe(self) -> str:
        s = self.signature
        return (f"[{s.severity}] {s.title} ({s.id}), log line {self.line_no}: "
                f"{self.line.strip()[:200]}\n    -> {s.advice}"
                + (f" (reported: {s.source})" if s.source else ""))


def _regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as exc:
        raise problem("", f"not a valid regular expression: {exc}") from None
    return text


class SignatureTable(TomlTable):
    """One ``[[signature]]`` entry."""

    id: Annotated[str, matches(r"[a-z0-9][a-z0-9-]*")]
    title: str
    pattern: Annotated[str, AfterValidator(_regex)]
    severity: Annotated[str, one_of(SEVERITIES)] = "error"
    advice: str
    source: str = ""


class SignaturesFile(TomlTable):
    signature: list[SignatureTable] = Field(default_factory=list)


def _parse(file: Path) -> list[Signature]:
    try:
        data = tomllib.loads(file.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read signatures: {exc}") from None
    entries = validate(SignaturesFile, Table(data, file)).signature
    return [Signature(e.id, e.title, re.compile(e.pattern, re.IGNORECASE), e.severity,
                      e.advice, e.source) for e in entries]


@cache
def load(extra: Path | None = None) -> tuple[Signature, ...]:
    """Built-in signatures, with the user's file's entries replacing same-id ones."""
    sigs = {s.id: s for s in _parse(BUILTIN)}
    if extra is not None:
        sigs.update({s.id: s for s in _parse(extra)})
    return tuple(sigs.values())


def scan_text(text: str, signatures: tuple[Signature, ...]) -> list[Hit]:
    """The first hit of each signature, in log order."""
    hits: dict[str, Hit] = {}
    for no, line in enumerate(text.splitlines(), 1):
        for sig in signatures:
            if sig.id not in hits and sig.pattern.search(line):
                hits[sig.id] = Hit(sig, no, line)
    return sorted(hits.values(), key=lambda h: h.line_no)


def scan_log(path: Path | None, signatures: tuple[Signature, ...]) -> list[Hit]:
    if path is None:
        return []
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return scan_text(text, signatures)
