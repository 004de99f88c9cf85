"""The JSON Schema 2020-12 metaschema, checked by hand-written code: the verdict of ``jsonschema``'s
``check_schema`` in tens of microseconds instead of milliseconds.

It covers every keyword the 2020-12 metaschema (and its seven vocabularies) constrains, including the
deprecated ``definitions``/``dependencies``/``$recursive*`` it keeps, and the ``regex`` format of ``pattern``
and ``patternProperties`` names (compiled with ``re``, as ``jsonschema`` does). Unknown keywords are allowed,
as in the metaschema. URI formats (``$id``, ``$ref``, ``$schema``) are annotations here, as they are for
``jsonschema`` without its optional URI packages. A schema that names another dialect in ``$schema`` is not
checked here (``check`` returns None) and goes to ``jsonschema``. A test compares the two on generated schemas.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["DIALECT", "check"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_DIALECTS = frozenset({DIALECT, DIALECT + "#"})

_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_SUBSCHEMA = (
    "items",
    "contains",
    "additionalProperties",
    "propertyNames",
    "if",
    "then",
    "else",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
_SCHEMA_LISTS = ("prefixItems", "allOf", "anyOf", "oneOf")
_NUMBERS = ("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum")
_COUNTS = (
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
)
_STRINGS = (
    "$id",
    "$schema",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "$comment",
    "title",
    "description",
    "format",
    "contentEncoding",
    "contentMediaType",
)
_BOOLEANS = ("uniqueItems", "deprecated", "readOnly", "writeOnly")
_ANCHORS = ("$anchor", "$dynamicAnchor", "$recursiveAnchor")
_ANCHOR = re.compile(r"[A-Za-z_][-A-Za-z0-9._]*")
_ID = re.compile(r"[^#]*#?")


class _Problem(Exception):
    def __init__(self, path: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.where = "/".join(path) or "(top level)"
        self.message = message


Path = tuple[str, ...]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    """A non-negative integer in JSON Schema's sense (``3.0`` is one)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, float) and value.is_integer() and value >= 0


def _is_regex(text: str) -> bool:
    try:
        re.compile(text)
    except (re.error, RecursionError, OverflowError, ValueError):
        return False
    return True


def _unique_strings(value: Any, path: Path, what: str) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Problem(path, f"{what} must be an array of strings")
    if len(set(value)) != len(value):
        raise _Problem(path, f"{what} has repeated items")


# One rule per keyword, looked up for the keys a schema has (a schema has a few; the metaschema knows ~60).


def _string(value: Any, path: Path) -> None:
    if not isinstance(value, str):
        raise _Problem(path, f"{_show(value)} is not a string")


def _id(value: Any, path: Path) -> None:
    _string(value, path)
    if not _ID.fullmatch(value):
        raise _Problem(path, "an $id may not have a non-empty fragment")


def _anchor(value: Any, path: Path) -> None:
    if not isinstance(value, str) or not _ANCHOR.fullmatch(value):
        raise _Problem(path, f"{_show(value)} is not a valid anchor name")


def _vocabulary(value: Any, path: Path) -> None:
    if not isinstance(value, dict) or not all(isinstance(v, bool) for v in value.values()):
        raise _Problem(path, "must map vocabulary URIs to true or false")


def _boolean(value: Any, path: Path) -> None:
    if not isinstance(value, bool):
        raise _Problem(path, f"{_show(value)} is not a boolean")


def _number(value: Any, path: Path) -> None:
    if not _is_number(value):
        raise _Problem(path, f"{_show(value)} is not a number")


def _count(value: Any, path: Path) -> None:
    if not _is_count(value):
        raise _Problem(path, f"{_show(value)} is not a non-negative integer")


def _multiple_of(value: Any, path: Path) -> None:
    if not _is_number(value) or not value > 0:
        raise _Problem(path, f"{_show(value)} is not a number above 0")


def _array(value: Any, path: Path) -> None:
    if not isinstance(value, list):
        raise _Problem(path, f"{_show(value)} is not an array")


def _pattern(value: Any, path: Path) -> None:
    _string(value, path)
    if not _is_regex(value):
        raise _Problem(path, f"{value!r} is not a valid regular expression")


def _required(value: Any, path: Path) -> None:
    _unique_strings(value, path, "required")


def _dependent_required(value: Any, path: Path) -> None:
    if not isinstance(value, dict):
        raise _Problem(path, f"{_show(value)} is not an object")
    for name, names in value.items():
        _unique_strings(names, (*path, name), "each dependentRequired entry")


def _dependencies(value: Any, path: Path) -> None:
    if not isinstance(value, dict):
        raise _Problem(path, f"{_show(value)} is not an object")
    for name, item in value.items():
        if isinstance(item, list):
            _unique_strings(item, (*path, name), "each dependencies entry")
        else:
            _schema(item, (*path, name))


def _schema_list(value: Any, path: Path) -> None:
    if not isinstance(value, list) or not value:
        raise _Problem(path, f"{_show(value)} is not a non-empty array of schemas")
    for i, item in enumerate(value):
        _schema(item, (*path, str(i)))


def _schema_map(value: Any, path: Path) -> None:
    if not isinstance(value, dict):
        raise _Problem(path, f"{_show(value)} is not an object")
    for name, sub in value.items():
        _schema(sub, (*path, name))


def _pattern_map(value: Any, path: Path) -> None:
    if isinstance(value, dict):
        for name in value:
            if not _is_regex(name):
                raise _Problem(path, f"{name!r} is not a valid regular expression")
    _schema_map(value, path)


def _type(value: Any, path: Path) -> None:
    if isinstance(value, str):
        if value not in _TYPES:
            raise _Problem(path, f"{value!r} is not a type (one of {', '.join(sorted(_TYPES))})")
        return
    if not isinstance(value, list) or not value:
        raise _Problem(path, f"{_show(value)} is not a type name or a non-empty array of type names")
    for item in value:
        if not isinstance(item, str) or item not in _TYPES:
            raise _Problem(path, f"{_show(item)} is not a type (one of {', '.join(sorted(_TYPES))})")
    if len(set(value)) != len(value):
        raise _Problem(path, "the type array has repeated names")


_RULES: dict[str, Callable[[Any, Path], None]] = {
    **dict.fromkeys(_STRINGS, _string),
    **dict.fromkeys(_ANCHORS, _anchor),
    **dict.fromkeys(_BOOLEANS, _boolean),
    **dict.fromkeys(_NUMBERS, _number),
    **dict.fromkeys(_COUNTS, _count),
    **dict.fromkeys(_SUBSCHEMA, lambda value, path: _schema(value, path)),
    **dict.fromkeys(_SCHEMA_LISTS, _schema_list),
    **dict.fromkeys(_SCHEMA_MAPS, _schema_map),
    "$id": _id,
    "$vocabulary": _vocabulary,
    "multipleOf": _multiple_of,
    "type": _type,
    "enum": _array,
    "examples": _array,
    "pattern": _pattern,
    "patternProperties": _pattern_map,
    "required": _required,
    "dependentRequired": _dependent_required,
    "dependencies": _dependencies,
}


def _schema(node: Any, path: Path) -> None:
    if node is True or node is False:
        return
    if type(node) is not dict and not isinstance(node, dict):
        raise _Problem(path, f"{_show(node)} is not a schema (an object or a boolean)")
    rules = _RULES
    for key, value in node.items():
        rule = rules.get(key)
        if rule is not None:
            rule(value, (*path, key))


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check(schema: Any) -> list[str] | None:
    """Problems of ``schema`` against the 2020-12 metaschema (``[]`` when valid), or None when ``schema``
    declares another dialect (the caller asks ``jsonschema``)."""
    if isinstance(schema, dict) and "$schema" in schema and schema["$schema"] not in _DIALECTS:
        return None
    try:
        _schema(schema, ())
    except _Problem as problem:
        return [f"{problem.message} at {problem.where}"]
    except RecursionError:
        return None  # absurdly deep: let jsonschema give its verdict
    return []
