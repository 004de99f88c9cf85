"""Scalar coercions: turn what a model sent into the JSON type the schema asks for, or say it can't.

Each ``to_*`` function returns the converted value, or ``MISSING`` when the value cannot honestly be read as
that type (fractions are not integers, hex and exponents are not accepted, booleans are not numbers).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Final

__all__ = [
    "CONVERTERS",
    "MISSING",
    "json_type",
    "to_array",
    "to_boolean",
    "to_integer",
    "to_number",
    "to_object",
]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()

_MAX_NUMBER_CHARS = 80
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+(?:\.0*)?", re.ASCII)
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", re.ASCII)
_TRUE = frozenset({"true", "yes", "on", "1", "t", "y"})
_FALSE = frozenset({"false", "no", "off", "0", "f", "n"})


def json_type(value: Any) -> str | None:
    """The JSON type name of a decoded value (``integer`` for ints, ``number`` for floats), None if foreign."""
    kind = type(value)
    if kind is str:
        return "string"
    if kind is int:
        return "integer"
    if kind is float:
        return "number"
    if kind is bool:
        return "boolean"
    if value is None:
        return "null"
    if kind is dict:
        return "object"
    if kind is list:
        return "array"
    return None


def to_integer(value: Any) -> Any:
    """An int from an int, an integral finite float or a decimal string such as ``"42"`` or ``" -7 "``."""
    kind = type(value)
    if kind is int:
        return value
    if kind is float:
        if math.isfinite(value) and value.is_integer():
            return int(value)
        return MISSING
    if kind is str:
        text = value.strip()
        if len(text) <= _MAX_NUMBER_CHARS and _INTEGER_TEXT.fullmatch(text):
            return int(text.split(".", 1)[0])
    return MISSING


def to_number(value: Any) -> Any:
    """An int or finite float from a number or a plain decimal string (``"2.5"``, ``"-3"``, ``".5"``)."""
    kind = type(value)
    if kind is int:
        return value
    if kind is float:
        return value if math.isfinite(value) else MISSING
    if kind is str:
        text = value.strip()
        if len(text) <= _MAX_NUMBER_CHARS and _DECIMAL_TEXT.fullmatch(text):
            if "." in text:
                return float(text)
            return int(text)
    return MISSING


def to_boolean(value: Any) -> Any:
    """A bool from a bool, the ints 0/1, or true/false, yes/no, on/off, 1/0, t/f, y/n in any case."""
    kind = type(value)
    if kind is bool:
        return value
    if kind is int and value in (0, 1):
        return value == 1
    if kind is str and len(value) <= 16:
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    return MISSING


def _decode_container(text: str) -> Any:
    from ._args_errors import ToolArgumentError
    from ._parse import parse_text

    try:
        return parse_text(text)
    except ToolArgumentError:
        return MISSING


def to_array(value: Any) -> Any:
    """A list from a list, a string holding a JSON array, or any other non-null value wrapped as ``[value]``."""
    kind = type(value)
    if kind is list:
        return value
    if value is None:
        return MISSING
    if kind is str:
        text = value.strip()
        if text.startswith("["):
            decoded = _decode_container(text)
            return decoded if type(decoded) is list else MISSING
    return [value]


def to_object(value: Any) -> Any:
    """A dict from a dict or a string holding a JSON object."""
    kind = type(value)
    if kind is dict:
        return value
    if kind is str:
        text = value.strip()
        if text.startswith("{"):
            decoded = _decode_container(text)
            return decoded if type(decoded) is dict else MISSING
    return MISSING


def _to_string(value: Any) -> Any:
    return value if type(value) is str else MISSING


def _to_null(value: Any) -> Any:
    return value if value is None else MISSING


CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "integer": to_integer,
    "number": to_number,
    "boolean": to_boolean,
    "array": to_array,
    "object": to_object,
    "string": _to_string,
    "null": _to_null,
}
