"""Coercion: convert what a model sent toward the schema where that is unambiguous, drop what it must not send."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hermes_core.schema._args import (
    ToolArgumentError,
    coerce_tool_args,
    compile_arguments,
    parse_tool_arguments,
)
from hermes_core.schema._coerce import MISSING, to_array, to_boolean, to_integer, to_number, to_object


def one(schema: dict[str, Any], value: Any) -> Any:
    """Coerce a single field ``v`` (optional) and return what came out (MISSING if dropped)."""
    result = coerce_tool_args({"type": "object", "properties": {"v": schema}}, {"v": value})
    return result.get("v", MISSING)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, 5),
        (-3, -3),
        (5.0, 5),
        ("5", 5),
        (" -12 ", -12),
        ("+7", 7),
        ("3.0", 3),
        ("3.5", MISSING),
        (2.5, MISSING),
        ("0x10", MISSING),
        ("1e3", MISSING),
        ("1_000", MISSING),
        ("١٢", MISSING),
        (True, MISSING),
        ("ten", MISSING),
        (float("inf"), MISSING),
        (float("nan"), MISSING),
        ("9" * 200, MISSING),
    ],
)
def test_to_integer(value: Any, expected: Any) -> None:
    result = to_integer(value)
    assert result == expected if expected is not MISSING else result is MISSING
    if expected is not MISSING:
        assert type(result) is int


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (2.5, 2.5),
        (3, 3),
        ("2.5", 2.5),
        ("-.5", -0.5),
        ("7", 7),
        ("1e5", MISSING),
        (False, MISSING),
        ("nan", MISSING),
    ],
)
def test_to_number(value: Any, expected: Any) -> None:
    result = to_number(value)
    assert result == expected if expected is not MISSING else result is MISSING


@pytest.mark.parametrize("text", ["true", "TRUE", "Yes", "on", "1", "t", "Y", " y "])
def test_to_boolean_true(text: str) -> None:
    assert to_boolean(text) is True


@pytest.mark.parametrize("text", ["false", "False", "NO", "off", "0", "f", "n"])
def test_to_boolean_false(text: str) -> None:
    assert to_boolean(text) is False


@pytest.mark.parametrize("value", ["maybe", 2, -1, 0.5, None, [], "truthy"])
def test_to_boolean_refuses(value: Any) -> None:
    assert to_boolean(value) is MISSING


def test_booleans_from_ints() -> None:
    assert to_boolean(1) is True and to_boolean(0) is False


def test_to_array_and_to_object() -> None:
    assert to_array("[1, 2]") == [1, 2]
    assert to_array("a,b") == ["a,b"]
    assert to_array(3) == [3]
    assert to_array({"k": 1}) == [{"k": 1}]
    assert to_array(None) is MISSING
    assert to_array("[1, 2") is MISSING
    assert to_object('{"k": 1}') == {"k": 1}
    assert to_object("[1]") is MISSING
    assert to_object("k=1") is MISSING
    assert to_object(3) is MISSING


def test_fields_are_coerced_recursively() -> None:
    schema = {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "force": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "integer"}},
            "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}},
            "pairs": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        },
    }
    raw = {
        "count": "3",
        "ratio": "0.5",
        "force": "yes",
        "tags": '["1", 2.0]',
        "opts": '{"deep": "off", "sudo": true}',
        "pairs": {"n": "4", "skip_approval": True},
    }
    before = copy.deepcopy(raw)
    assert coerce_tool_args(schema, raw) == {
        "count": 3,
        "ratio": 0.5,
        "force": True,
        "tags": [1, 2],
        "opts": {"deep": False},
        "pairs": [{"n": 4}],
    }
    assert raw == before  # never mutated


def test_result_is_a_new_dict_even_when_nothing_changes() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    args = {"a": 1}
    result = coerce_tool_args(schema, args)
    assert result == args and result is not args
    processor = compile_arguments(schema)
    assert processor(args) is not args


def test_unknown_keys_are_dropped_and_never_honoured() -> None:
    schema = {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}
    assert parse_tool_arguments(schema, '{"cmd": "ls", "skip_approval": true, "sudo": true}') == {"cmd": "ls"}
    closed = {**schema, "additionalProperties": False}
    assert parse_tool_arguments(closed, {"cmd": "ls", "sudo": True}) == {"cmd": "ls"}
    no_fields = {"type": "object", "properties": {}}
    assert parse_tool_arguments(no_fields, '{"sudo": true}') == {}


def test_extra_keys_are_kept_when_the_schema_allows_them() -> None:
    typed = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": {"type": "integer"},
    }
    assert parse_tool_arguments(typed, '{"a": "1", "x": "2"}') == {"a": 1, "x": 2}
    with pytest.raises(ToolArgumentError, match="'x': expected integer"):
        parse_tool_arguments(typed, '{"x": "two"}')
    anything = {"type": "object", "properties": {"a": {}}, "additionalProperties": True}
    assert parse_tool_arguments(anything, '{"a": 1, "b": [1]}') == {"a": 1, "b": [1]}
    untyped = {"type": "object"}
    assert parse_tool_arguments(untyped, '{"b": {"c": null}}') == {"b": {"c": None}}


def test_null_on_an_optional_field_means_absent() -> None:
    schema = {
        "type": "object",
        "properties": {
            "limit": {"type": "integer"},
            "name": {"type": "string"},
            "maybe": {"type": ["integer", "null"]},
        },
        "required": ["name"],
    }
    assert parse_tool_arguments(schema, '{"name": "x", "limit": null, "maybe": null}') == {
        "name": "x",
        "maybe": None,
    }
    with pytest.raises(ToolArgumentError, match="'name': expected string, got null"):
        parse_tool_arguments(schema, '{"name": null}')


def test_unions_keep_a_valid_value_and_otherwise_take_the_first_branch_that_fits() -> None:
    either = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert one(either, "5") == "5"
    assert one(either, 5.0) == 5
    listed = {"type": ["integer", "string"]}
    assert one(listed, "5") == "5"
    nullable = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert one(nullable, "7") == 7
    assert one(nullable, None) is None
    flag_or_list = {"oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "string"}}]}
    assert one(flag_or_list, "no") is False
    assert one(flag_or_list, ["a"]) == ["a"]
    shapes = {
        "anyOf": [
            {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
            {"type": "object", "properties": {"y": {"type": "integer"}}, "required": ["y"]},
        ]
    }
    assert one(shapes, {"y": "2", "z": 1}) == {"y": 2}


def test_enums_and_refs() -> None:
    assert one({"enum": [1, 2, 3]}, "2") == 2
    assert one({"type": "string", "enum": ["a", "b"]}, "a") == "a"
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/Node"}},
            }
        },
    }
    raw = '{"node": {"value": "1", "next": {"value": "2", "next": {"value": 3, "evil": 1}}}}'
    assert parse_tool_arguments(schema, raw) == {
        "node": {"value": 1, "next": {"value": 2, "next": {"value": 3}}}
    }


def test_all_of_members_share_their_declared_keys() -> None:
    schema = {
        "type": "object",
        "allOf": [
            {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "boolean"}}},
        ],
    }
    assert parse_tool_arguments(schema, '{"a": "1", "b": "on", "c": 3}') == {"a": 1, "b": True}


def test_strings_are_not_invented() -> None:
    with pytest.raises(ToolArgumentError, match="'v': expected string, got 5"):
        parse_tool_arguments({"type": "object", "properties": {"v": {"type": "string"}}}, '{"v": 5}')


def test_coerce_refuses_a_non_object() -> None:
    with pytest.raises(ToolArgumentError, match="expected a JSON object"):
        coerce_tool_args({"type": "object"}, [1, 2])  # type: ignore[arg-type]


def test_tool_schema_forms_are_understood() -> None:
    params = {"type": "object", "properties": {"n": {"type": "integer"}}}
    for schema in (
        {"name": "t", "description": "d", "parameters": params},
        {"type": "function", "function": {"name": "t", "parameters": params}},
        {"name": "t", "input_schema": params},
        {"name": "t", "inputSchema": params},
        params,
    ):
        assert parse_tool_arguments(schema, '{"n": "4", "x": 1}') == {"n": 4}
    assert parse_tool_arguments({"name": "t", "parameters": None}, '{"x": 1}') == {}
