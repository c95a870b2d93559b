"""Field types and checks shared by the suite.toml models: arrays, choices, patterns.

TOML arrays arrive as lists; the models hold tuples (frozen all the way down), so each array
type converts after checking its items, with the wording users saw before pydantic. Bounds
are pydantic's own (``Field(ge=..., le=...)``); ``toml.config_error`` words them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from pytest_rocm_llm.config.toml import problem


def _str_list(value: Any) -> Any:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise problem("", f"expected an array of strings, got {value!r}")
    return tuple(value)


def _number_list(value: Any) -> Any:
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise problem("", f"expected an array of numbers, got {value!r}")
    if not all(math.isfinite(v) for v in value):
        raise problem("", f"expected finite numbers, got {list(value)!r}")
    return tuple(float(v) for v in value)


StrList = Annotated[tuple[str, ...], BeforeValidator(_str_list)]
NumberList = Annotated[tuple[float, ...], BeforeValidator(_number_list)]


def check(test: Callable[[Any], bool], message: Callable[[Any], str]) -> AfterValidator:
    """A validator whose failure reads ``message(value)`` at the field's key."""
    def run(value: Any) -> Any:
        if value is not None and not test(value):
            raise problem("", message(value))
        return value
    return AfterValidator(run)


def one_of(choices: tuple[str, ...], what: str = "") -> AfterValidator:
    """"'x' is not <what> (a, b)", or "'x' is not one of a, b" without ``what``."""
    listed = ", ".join(choices)
    if what:
        return check(lambda v: v in choices, lambda v: f"{v!r} is not {what} ({listed})")
    return check(lambda v: v in choices, lambda v: f"{v!r} is not one of {listed}")


def each_one_of(choices: tuple[str, ...]) -> AfterValidator:
    """Every string of an array from ``choices``."""
    def first_bad(v: tuple[str, ...]) -> str:
        bad = next(x for x in v if x not in choices)
        return f"{bad!r} is not one of {', '.join(choices)}"
    return check(lambda v: all(x in choices for x in v), first_bad)


def matches(pattern: str) -> AfterValidator:
    """A string matching ``pattern`` whole."""
    return check(lambda v: re.fullmatch(pattern, v) is not None,
                 lambda v: f"{v!r} does not match {pattern}")
