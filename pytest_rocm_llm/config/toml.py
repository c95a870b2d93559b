"""TOML tables validated by pydantic models, with errors that name the file and the dotted key.

Every suite.toml table is a ``TomlTable`` model (strict types, frozen, unknown keys refused);
``validate`` runs one over a table and turns pydantic's ``ValidationError`` into the project's
``ConfigError``: "<file>: key '<dotted.key>': <problem>; <fix>".

Why pydantic v2 rather than msgspec: its error locations are tuples of keys, so the dotted key
comes for free at any depth; it has strict mode (TOML's ``"4"`` stays a string, never an
integer), ``extra="forbid"``, frozen models and discriminated unions on ``kind``; and it is
the most widely used validation library (guidellm and aiperf configure load runs with it), so
a contributor already knows it. msgspec is faster, but parsing a suite is once per run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, ClassVar, NoReturn, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from pytest_rocm_llm.errors import ConfigError

M = TypeVar("M", bound="TomlTable")

_TYPE_NAMES = {bool: "boolean", int: "integer", float: "float", str: "string", list: "array",
               tuple: "array", dict: "table"}



def type_name(value: object) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


class Table:
    """Where a TOML table sits (file, dotted path) and its parsed data."""

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

    def kind(self, kinds: Iterable[str], noun: str, base: Any = None) -> str:
        """The table's ``kind`` (a per-target override inherits ``base``'s and cannot change
        it), one of ``kinds``; ``noun`` names what a kind is of in the error."""
        kinds = tuple(kinds)
        kind = self.data.get("kind", getattr(base, "kind", None))
        if kind is None:
            self.fail("kind", "is required but missing")
        if kind not in kinds:
            self.fail("kind", f"{kind!r} is not {noun} kind ({', '.join(kinds)})")
        if base is not None and kind != base.kind:
            self.fail("kind", f"a target override cannot change the kind ({base.kind} -> "
                              f"{kind})")
        return str(kind)

    def subtables(self) -> Iterator[tuple[str, Table]]:
        """Every key of this table, each of which must itself be a table."""
        for name, value in self.data.items():
            self._seen.add(name)
            if not isinstance(value, dict):
                self.fail(name, f"expected a table, got {type_name(value)} {value!r}")
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

    def sub(self, name: str) -> Table:
        """The sub-table ``name`` (empty when absent); anything else there is an error."""
        value = self.data.get(name, {})
        if not isinstance(value, dict):
            self.fail(name, f"expected a table, got {type_name(value)} {value!r}")
        return Table(value, self.file, self.key(name))


def problem(key: str | None, message: str) -> PydanticCustomError:
    """A validation error worded for the user. ``key`` is relative to where the validator
    runs ("" for the field itself); None names the whole table."""
    return PydanticCustomError("config", "{message}", {"message": message, "key": key})


class TomlTable(BaseModel):
    """A TOML table: strict types (no "4" -> 4), finite numbers, frozen, no unknown keys."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)
    # Keys a table accepts that are not fields (none by default).
    extra_keys: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="wrap")
    @classmethod
    def _known_keys(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        # Missing and mistyped keys are reported first (an unknown key is often the missing
        # one misspelt, and "required but missing" says more); then the first unknown key,
        # with the keys this table knows.
        if not isinstance(data, dict):
            return handler(data)
        known = [*cls.model_fields, *cls.extra_keys]
        unknown = sorted(k for k in data if k not in known)
        model = handler({k: v for k, v in data.items() if k in known})
        if unknown:
            raise problem(unknown[0], f"unknown key; known keys here: {', '.join(known)}")
        return model


def _describe(err: Mapping[str, Any]) -> str:
    """Today's wording for each pydantic error type."""
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    got = f"{type_name(value)} {value!r}"
    if kind == "config":
        return str(ctx["message"])
    if kind == "missing":
        return "is required but missing"
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "string_type":
        return f"expected a string, got {got}"
    if kind == "bool_type":
        return f"expected true or false, got {got}"
    if kind in ("int_type", "int_from_float", "int_parsing"):
        return f"expected an integer, got {got}"
    if kind in ("float_type", "float_parsing"):
        return f"expected a number, got {got}"
    if kind == "finite_number":
        return f"expected a finite number, got {value!r}"
    bounds = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"),
              "less_than_equal": ("<=", "le"), "less_than": ("<", "lt")}
    if kind in bounds:
        op, name = bounds[kind]
        return f"{value!r} is out of range: must be {op} {ctx[name]}"
    if kind == "string_pattern_mismatch":
        return f"{value!r} does not match {ctx['pattern']}"
    if kind in ("list_type", "tuple_type"):
        return f"expected an array, got {got}"
    if kind in ("dict_type", "model_type", "model_attributes_type", "dataclass_type"):
        return f"expected a table, got {got}"
    if kind == "literal_error":
        return f"{value!r} is not one of {ctx.get('expected', '')}"
    return str(err["msg"])


def _dotted(loc: tuple[int | str, ...]) -> list[str]:
    """Key parts of an error location; an array index joins its key: ``signature[0]``."""
    parts: list[str] = []
    for p in loc:
        if isinstance(p, int) and parts:
            parts[-1] += f"[{p}]"
        elif p != "[key]":
            parts.append(str(p))
    return parts


def config_error(exc: ValidationError, where: Table) -> ConfigError:
    """The first problem pydantic found, as "<file>: key '<dotted.key>': <problem>"."""
    err = exc.errors(include_url=False)[0]
    parts = _dotted(err["loc"])
    key = (err.get("ctx") or {}).get("key", "") if err["type"] == "config" else ""
    if key is None:
        path = ".".join(p for p in (where.path, *parts) if p)
        return ConfigError(f"{where.file}: table [{path}]: {_describe(err)}")
    if key:
        parts.append(key)
    name = ".".join(parts)
    at = f"key '{where.key(name)}'" if name else f"table [{where.path}]"
    return ConfigError(f"{where.file}: {at}: {_describe(err)}")


def validate(schema: type[M], where: Table, data: Mapping[str, Any] | None = None,
             context: Mapping[str, Any] | None = None) -> M:
    """``schema`` over ``data`` (default: the table's own); a ConfigError naming the key."""
    try:
        return schema.model_validate(where.data if data is None else data,
                                     context=dict(context or {}))
    except ValidationError as exc:
        raise config_error(exc, where) from None


def as_table(obj: object, keys: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A parsed config (a dataclass) back as the table it came from, for overriding it;
    only ``keys`` (a schema's fields) when given."""
    if not is_dataclass(obj) or isinstance(obj, type):
        return {}
    out: dict[str, Any] = {}
    for f in fields(obj):
        if f.name == "name" or (keys is not None and f.name not in keys):
            continue
        value = getattr(obj, f.name)
        out[f.name] = as_table(value) if is_dataclass(value) else value
    return out


def overlay(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``override``'s keys replacing its own; sub-tables merge key by key.
    The one rule for every per-target override ([targets.<t>.workloads|evals|checks.*])."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = overlay(out[key], value)
        else:
            out[key] = value
    return out


def override_of(schema: type[BaseModel], base: object | None,
                table: Mapping[str, Any]) -> dict[str, Any]:
    """The table to validate: ``table`` alone, or over the fields of ``base`` it overrides."""
    if base is None:
        return dict(table)
    return overlay(as_table(base, schema.model_fields), table)
