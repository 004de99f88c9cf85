"""The hand-written 2020-12 metaschema check gives jsonschema's verdict, on chosen and on generated schemas."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, exceptions

from hermes_core.schema import schema_problems
from hermes_core.schema._metacheck import check


def jsonschema_ok(schema: Any) -> bool:
    try:
        Draft202012Validator.check_schema(schema)
    except exceptions.SchemaError:
        return False
    return True


KEYWORDS = [
    "type", "properties", "required", "items", "prefixItems", "enum", "const", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "minItems",
    "maxItems", "uniqueItems", "minContains", "maxContains", "contains", "minProperties", "maxProperties",
    "additionalProperties", "patternProperties", "propertyNames", "dependentRequired", "dependentSchemas",
    "dependencies", "definitions", "$defs", "$ref", "$id", "$anchor", "$dynamicAnchor", "$dynamicRef",
    "$comment", "$vocabulary", "$recursiveAnchor", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if",
    "then", "else", "unevaluatedItems", "unevaluatedProperties", "title", "description", "default",
    "deprecated", "readOnly", "writeOnly", "examples", "format", "contentEncoding", "contentMediaType",
    "contentSchema", "x-custom",
]  # fmt: skip
TEXT = st.sampled_from(
    ["string", "integer", "number", "object", "array", "boolean", "null", "integr", "a+", "[", "(?P<x>a)",
     "#frag", "x#", "_anchor", "9bad", "", "email", "https://example.com/s", "a-b.c"]
)  # fmt: skip
SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 5),
    st.sampled_from([0.0, 2.0, 2.5, -1.5, float("inf")]),
    TEXT,
)


def schemas() -> st.SearchStrategy[Any]:
    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.lists(st.one_of(children, TEXT), max_size=3),
            st.dictionaries(st.one_of(st.sampled_from(KEYWORDS), TEXT), children, max_size=4),
        )

    return st.recursive(SCALAR, extend, max_leaves=12)


@settings(max_examples=1200, deadline=None)
@given(schema=schemas())
def test_generated_schemas_get_jsonschemas_verdict(schema: Any) -> None:
    found = check(schema)
    assert found is not None
    assert (found == []) is jsonschema_ok(schema), (schema, found)


@settings(max_examples=600, deadline=None)
@given(schema=st.dictionaries(st.sampled_from(KEYWORDS), schemas(), max_size=5))
def test_generated_keyword_tables_get_jsonschemas_verdict(schema: dict[str, Any]) -> None:
    found = check(schema)
    assert found is not None
    assert (found == []) is jsonschema_ok(schema), (schema, found)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"x": {"type": "integr"}}},
        {"type": "object", "required": "x"},
        {"type": "object", "required": ["x", "x"]},
        {"type": ["string", "string"]},
        {"type": []},
        {"pattern": "("},
        {"patternProperties": {"(": {}}},
        {"minLength": -1},
        {"minLength": 2.5},
        {"multipleOf": 0},
        {"allOf": []},
        {"$id": "a#b"},
        {"$anchor": "9"},
        {"properties": {"deep": {"items": {"anyOf": [{"type": 5}]}}}},
        {"dependencies": {"a": ["b", 3]}},
    ],
)
def test_chosen_invalid_schemas(schema: dict[str, Any]) -> None:
    assert not jsonschema_ok(schema)
    [problem] = schema_problems(schema)
    assert " at " in problem


def test_valid_tool_schemas_and_other_dialects() -> None:
    good = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "pattern": "^[^\\0]+$"},
            "mode": {"enum": ["r", "w"]},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "limit": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
        },
        "required": ["path"],
        "additionalProperties": False,
        "$defs": {"n": {"type": "number", "multipleOf": 0.5}},
    }
    assert check(good) == [] and jsonschema_ok(good)
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}
    assert check(draft7) is None  # not this dialect: jsonschema decides
    assert schema_problems(draft7) == []
    assert schema_problems({"$schema": "http://json-schema.org/draft-07/schema#", "type": 3})
