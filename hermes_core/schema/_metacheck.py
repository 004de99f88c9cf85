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
    def __init__(self, path: list[str], message: str) -> None:
        super().__init__(message)
        self.where = "/".join(path) or "(top level)"
        self.message = message


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


def _unique_strings(value: Any, path: list[str], what: str) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Problem(path, f"{what} must be an array of strings")
    if len(set(value)) != len(value):
        raise _Problem(path, f"{what} has repeated items")


def _schema(node: Any, path: list[str]) -> None:
    if isinstance(node, bool):
        return
    if not isinstance(node, dict):
        raise _Problem(path, f"{_show(node)} is not a schema (an object or a boolean)")
    for key in _STRINGS:
        if key in node and not isinstance(node[key], str):
            raise _Problem([*path, key], f"{_show(node[key])} is not a string")
    for key in _ANCHORS:
        if key in node:
            value = node[key]
            if not isinstance(value, str) or not _ANCHOR.fullmatch(value):
                raise _Problem([*path, key], f"{_show(value)} is not a valid anchor name")
    if "$id" in node and not _ID.fullmatch(node["$id"]):
        raise _Problem([*path, "$id"], "an $id may not have a non-empty fragment")
    if "$vocabulary" in node:
        vocabulary = node["$vocabulary"]
        if not isinstance(vocabulary, dict) or not all(isinstance(v, bool) for v in vocabulary.values()):
            raise _Problem([*path, "$vocabulary"], "must map vocabulary URIs to true or false")
    for key in _BOOLEANS:
        if key in node and not isinstance(node[key], bool):
            raise _Problem([*path, key], f"{_show(node[key])} is not a boolean")
    for key in _NUMBERS:
        if key in node and not _is_number(node[key]):
            raise _Problem([*path, key], f"{_show(node[key])} is not a number")
    for key in _COUNTS:
        if key in node and not _is_count(node[key]):
            raise _Problem([*path, key], f"{_show(node[key])} is not a non-negative integer")
    if "multipleOf" in node:
        step = node["multipleOf"]
        if not _is_number(step) or not step > 0:
            raise _Problem([*path, "multipleOf"], f"{_show(step)} is not a number above 0")
    if "type" in node:
        _type(node["type"], [*path, "type"])
    for key in ("enum", "examples"):
        if key in node and not isinstance(node[key], list):
            raise _Problem([*path, key], f"{_show(node[key])} is not an array")
    if "pattern" in node:
        pattern = node["pattern"]
        if not isinstance(pattern, str):
            raise _Problem([*path, "pattern"], f"{_show(pattern)} is not a string")
        if not _is_regex(pattern):
            raise _Problem([*path, "pattern"], f"{pattern!r} is not a valid regular expression")
    if "required" in node:
        _unique_strings(node["required"], [*path, "required"], "required")
    if "dependentRequired" in node:
        table = node["dependentRequired"]
        if not isinstance(table, dict):
            raise _Problem([*path, "dependentRequired"], f"{_show(table)} is not an object")
        for name, names in table.items():
            _unique_strings(names, [*path, "dependentRequired", name], "each dependentRequired entry")
    if "dependencies" in node:
        table = node["dependencies"]
        if not isinstance(table, dict):
            raise _Problem([*path, "dependencies"], f"{_show(table)} is not an object")
        for name, value in table.items():
            if isinstance(value, list):
                _unique_strings(value, [*path, "dependencies", name], "each dependencies entry")
            else:
                _schema(value, [*path, "dependencies", name])
    for key in _SUBSCHEMA:
        if key in node:
            _schema(node[key], [*path, key])
    for key in _SCHEMA_LISTS:
        if key in node:
            items = node[key]
            if not isinstance(items, list) or not items:
                raise _Problem([*path, key], f"{_show(items)} is not a non-empty array of schemas")
            for i, item in enumerate(items):
                _schema(item, [*path, key, str(i)])
    for key in _SCHEMA_MAPS:
        if key in node:
            table = node[key]
            if not isinstance(table, dict):
                raise _Problem([*path, key], f"{_show(table)} is not an object")
            for name, sub in table.items():
                if key == "patternProperties" and not _is_regex(name):
                    raise _Problem([*path, key], f"{name!r} is not a valid regular expression")
                _schema(sub, [*path, key, name])


def _type(value: Any, path: list[str]) -> None:
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


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check(schema: Any) -> list[str] | None:
    """Problems of ``schema`` against the 2020-12 metaschema (``[]`` when valid), or None when ``schema``
    declares another dialect (the caller asks ``jsonschema``)."""
    if isinstance(schema, dict) and "$schema" in schema and schema["$schema"] not in _DIALECTS:
        return None
    try:
        _schema(schema, [])
    except _Problem as problem:
        return [f"{problem.message} at {problem.where}"]
    except RecursionError:
        return None  # absurdly deep: let jsonschema give its verdict
    return []
