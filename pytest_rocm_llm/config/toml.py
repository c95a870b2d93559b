"""Typed reads from parsed TOML with errors that name the file and the dotted key.

Every suite.toml read goes through ``Table`` so that a wrong type, a missing key or an
unknown key (usually a typo) stops the run with the file, the key and the fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from pytest_rocm_llm.errors import ConfigError

REQUIRED: Any = object()  # default meaning 'the key must be present'


def _type_name(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "array",
            dict: "table"}.get(type(value), type(value).__name__)


class Table:
    """One TOML table being read; tracks which keys were consumed."""

    def __init__(self, data: dict[str, Any], file: Path, path: str = "") -> None:
        self.data = data
        self.file = file
        self.path = path
        self._seen: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def fail(self, name: str | None, message: str) -> NoReturn:
        where = f"key '{self.key(name)}'" if name is not None else f"table [{self.path}]"
        raise ConfigError(f"{self.file}: {where}: {message}")

    def _get(self, name: str, default: Any) -> Any:
        self._seen.add(name)
        value = self.data.get(name, REQUIRED)
        if value is REQUIRED:
            if default is REQUIRED:
                self.fail(name, "is required but missing")
            return default
        return value

    def string(self, name: str, default: Any = REQUIRED, pattern: str | None = None) -> Any:
        value = self._get(name, default)
        if value is default and default is not REQUIRED:
            return value
        if not isinstance(value, str):
            self.fail(name, f"expected a string, got {_type_name(value)} {value!r}")
        if pattern is not None and not re.fullmatch(pattern, value):
            self.fail(name, f"{value!r} does not match {pattern}")
        return value

    def boolean(self, name: str, default: Any = REQUIRED) -> Any:
        value = self._get(name, default)
        if value is default and default is not REQUIRED:
            return value
        if not isinstance(value, bool):
            self.fail(name, f"expected true or false, got {_type_name(value)} {value!r}")
        return value

    def number(
        self,
        name: str,
        default: Any = REQUIRED,
        *,
        integer: bool = False,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
    ) -> Any:
        value = self._get(name, default)
        if value is default and default is not REQUIRED:
            return value
        allowed = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, allowed):
            kind = "an integer" if integer else "a number"
            self.fail(name, f"expected {kind}, got {_type_name(value)} {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(name, f"expected a finite number, got {value!r}")
        if minimum is not None and (value < minimum or (exclusive_minimum and value == minimum)):
            bound = f"> {minimum}" if exclusive_minimum else f">= {minimum}"
            self.fail(name, f"{value!r} is out of range: must be {bound}")
        if maximum is not None and value > maximum:
            self.fail(name, f"{value!r} is out of range: must be <= {maximum}")
        return value

    def str_list(self, name: str, default: Any = REQUIRED, choices: tuple[str, ...] = ()) -> Any:
        value = self._get(name, default)
        if value is default and default is not REQUIRED:
            return value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(name, f"expected an array of strings, got {value!r}")
        for v in value:
            if choices and v not in choices:
                self.fail(name, f"{v!r} is not one of {', '.join(choices)}")
        return tuple(value)

    def number_list(self, name: str, default: Any = REQUIRED) -> Any:
        value = self._get(name, default)
        if value is default and default is not REQUIRED:
            return value
        if not isinstance(value, list) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            self.fail(name, f"expected an array of numbers, got {value!r}")
        if not all(math.isfinite(v) for v in value):
            self.fail(name, f"expected finite numbers, got {value!r}")
        return tuple(float(v) for v in value)

    def table(self, name: str, required: bool = False) -> Table:
        value = self._get(name, REQUIRED if required else {})
        if not isinstance(value, dict):
            self.fail(name, f"expected a table, got {_type_name(value)} {value!r}")
        return Table(value, self.file, self.key(name))

    def subtables(self) -> Iterator[tuple[str, Table]]:
        """Every key of this table, each of which must itself be a table."""
        for name, value in self.data.items():
            self._seen.add(name)
            if not isinstance(value, dict):
                self.fail(name, f"expected a table, got {_type_name(value)} {value!r}")
            yield name, Table(value, self.file, self.key(name))

    def raw(self) -> dict[str, Any]:
        self._seen.update(self.data)
        return self.data

    def done(self) -> None:
        """Reject keys nobody read: they are typos or options this version does not have."""
        unknown = sorted(set(self.data) - self._seen)
        if unknown:
            known = ", ".join(sorted(self._seen)) or "(none)"
            self.fail(unknown[0], f"unknown key; known keys here: {known}")
