"""Validation: each bad field named by path, what was expected and what came, short enough for a model to act on."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from hermes_core.schema._args import ToolArgumentError, compile_arguments, parse_tool_arguments
from hermes_core.schema._args_errors import ArgumentProblem


def problems(schema: dict[str, Any], raw: Any) -> list[ArgumentProblem]:
    with pytest.raises(ToolArgumentError) as caught:
        parse_tool_arguments(schema, raw)
    assert isinstance(caught.value, ValueError)
    return caught.value.errors


def message(schema: dict[str, Any], raw: Any) -> str:
    with pytest.raises(ToolArgumentError) as caught:
        parse_tool_arguments(schema, raw)
    return str(caught.value)


def field(schema: dict[str, Any], value: Any) -> str:
    return message({"type": "object", "properties": {"v": schema}, "required": ["v"]}, {"v": value})


def test_the_message_from_the_spec() -> None:
    schema = {
        "type": "object",
        "properties": {"count": {"type": "integer"}, "path": {"type": "string"}},
        "required": ["path"],
    }
    assert message(schema, '{"count": "ten"}') == (
        "Invalid arguments for this tool: 'count': expected integer, got \"ten\"; missing required field 'path'."
    )
    errors = problems(schema, '{"count": "ten"}')
    assert errors[0] == ArgumentProblem("count", "integer", '"ten"')
    assert errors[1].path == "path" and errors[1].got == "nothing"


def test_nested_paths() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            },
            "odd key": {"type": "object", "properties": {"x": {"type": "integer"}}},
        },
    }
    errors = problems(
        schema, {"items": [{"name": "a"}, {"name": "b"}, {"name": 3}, {}], "odd key": {"x": "y"}}
    )
    assert [e.path for e in errors] == ["items[2].name", "items[3].name", '["odd key"].x']


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"type": "integer", "minimum": 1}, 0, "'v': expected a number >= 1, got 0"),
        ({"type": "integer", "maximum": 10}, 11, "expected a number <= 10, got 11"),
        ({"type": "number", "exclusiveMinimum": 0}, 0, "expected a number > 0, got 0"),
        ({"type": "number", "exclusiveMaximum": 1}, 1, "expected a number < 1, got 1"),
        ({"type": "integer", "minimum": 0, "exclusiveMinimum": True}, 0, "expected a number > 0"),
        ({"type": "integer", "multipleOf": 5}, 12, "expected a multiple of 5, got 12"),
        ({"type": "number", "multipleOf": 0.1}, 0.35, "expected a multiple of 0.1"),
        ({"type": "string", "minLength": 2}, "a", "expected a string of at least 2 characters"),
        (
            {"type": "string", "maxLength": 2},
            "abc",
            "expected a string of at most 2 characters, got 3 characters",
        ),
        (
            {"type": "string", "pattern": "^[a-z]+$"},
            "A1",
            'expected a string matching the pattern "^[a-z]+$"',
        ),
        (
            {"type": "array", "minItems": 2},
            [1],
            "expected an array of at least 2 items, got an array of 1 item",
        ),
        ({"type": "array", "maxItems": 1}, [1, 2], "expected an array of at most 1 items"),
        ({"type": "array", "uniqueItems": True}, [1, 2, 1], "expected an array of unique items"),
        (
            {"type": "object", "minProperties": 1},
            {},
            "expected an object with at least 1 fields, got an empty object",
        ),
        (
            {"type": "object", "maxProperties": 1},
            {"a": 1, "b": 2},
            "expected an object with at most 1 fields",
        ),
        ({"enum": ["r", "w"]}, "x", '\'v\': expected one of "r", "w", got "x"'),
        ({"const": "yes"}, "no", 'expected "yes", got "no"'),
        ({"type": ["integer", "null"]}, "x", 'expected integer or null, got "x"'),
        ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, "x", "expected integer or boolean"),
        ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 3, "exactly one allowed form"),
        ({"not": {"type": "string"}}, "s", "expected not string"),
        ({"type": "boolean"}, "perhaps", 'expected boolean, got "perhaps"'),
        ({"type": "array", "prefixItems": [{"type": "integer"}], "items": False}, [1, 2], "at most 1 items"),
        (
            {"type": "array", "items": [{"type": "integer"}], "additionalItems": False},
            [1, 2],
            "at most 1 items",
        ),
        (False, 1, "expected no value"),
    ],
)
def test_keywords(schema: Any, value: Any, expected: str) -> None:
    assert expected in field(schema, value)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "integer", "minimum": 1}, 1),
        ({"type": "number", "multipleOf": 0.1}, 0.3),
        ({"enum": [1, "a", None]}, None),
        ({"type": "array", "uniqueItems": True}, [1, True, "1"]),
        ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, True),
        ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, "s"),
        ({"not": {"type": "string"}}, 3),
        ({"type": "string", "format": "email"}, "not an email"),
        ({"type": "integer", "default": 3}, 4),
    ],
)
def test_valid_values_pass(schema: Any, value: Any) -> None:
    outer = {"type": "object", "properties": {"v": schema}}
    assert parse_tool_arguments(outer, {"v": value}) == {"v": value}


def test_bool_is_not_an_integer_and_one_is_not_true() -> None:
    assert "expected integer, got true" in field({"type": "integer"}, True)
    assert "got true" in field({"enum": [1, 2]}, True)


def test_defaults_are_not_injected() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "default": 5}}}
    assert parse_tool_arguments(schema, "{}") == {}


def test_at_most_five_problems_are_listed_and_values_are_cut() -> None:
    schema = {"type": "object", "properties": {f"f{i}": {"type": "integer"} for i in range(8)}}
    text = message(schema, {f"f{i}": "x" * 500 for i in range(8)})
    assert text.count("expected integer") == 5
    assert text.endswith("and 3 more problems.")
    assert len(text) < 600
    assert "x" * 70 not in text
    assert len(problems(schema, {f"f{i}": "x" for i in range(8)})) == 8


def test_string_and_array_caps() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string"}, "a": {"type": "array"}}}
    processor = compile_arguments(schema, max_string=10, max_items=3)
    assert processor('{"s": "0123456789", "a": [1, 2, 3]}') == {"s": "0123456789", "a": [1, 2, 3]}
    with pytest.raises(
        ToolArgumentError, match="'s': expected a string of at most 10 characters, got 11 characters"
    ):
        processor('{"s": "01234567890"}')
    with pytest.raises(ToolArgumentError, match="'a': expected an array of at most 3 items, got 4 items"):
        processor('{"a": [1, 2, 3, 4]}')
    with pytest.raises(ToolArgumentError, match="at most 10 characters"):
        processor({"s": "y" * 11})
    open_schema = {"type": "object", "additionalProperties": True}
    assert "at most 3 items" in str(
        _raises(compile_arguments(open_schema, max_items=3), '{"z": [[1, 2, 3, 4]]}')
    )


def _raises(processor: Any, raw: Any) -> ToolArgumentError:
    with pytest.raises(ToolArgumentError) as caught:
        processor(raw)
    return caught.value


def test_default_caps() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string"}, "a": {"type": "array"}}}
    processor = compile_arguments(schema)
    assert "at most 262144 characters" in str(_raises(processor, {"s": "x" * 262_145}))
    assert "at most 10000 items" in str(_raises(processor, {"a": [0] * 10_001}))
    assert "too long" in str(_raises(processor, '{"s": "' + "x" * 1_000_000 + '"}'))


def test_keywords_without_a_compiled_form_fall_back_to_jsonschema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "v": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}, "additionalProperties": True}
        },
    }
    assert parse_tool_arguments(schema, '{"v": {"ok": 1}}') == {"v": {"ok": 1}}
    errors = problems(schema, '{"v": {"BAD": 1}}')
    assert errors[0].path == "v" and errors[0].expected.startswith("a value satisfying")
    assert errors[0].got == '"BAD"'


def test_bad_schemas_are_refused_at_compile_time() -> None:
    with pytest.raises(ValueError, match="only local"):
        compile_arguments({"type": "object", "properties": {"a": {"$ref": "http://example.com/s.json"}}})
    with pytest.raises(ValueError, match="does not point"):
        compile_arguments({"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}})
    with pytest.raises(ValueError, match="circular"):
        compile_arguments(
            {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"}
        )
    with pytest.raises(ValueError, match="refers to itself"):
        compile_arguments(
            {"$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}], "type": "object"}}, "$ref": "#/$defs/A"}
        )
    with pytest.raises(ValueError, match="invalid pattern"):
        compile_arguments({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}})
    with pytest.raises(ValueError, match="unknown JSON Schema type"):
        compile_arguments({"type": "object", "properties": {"a": {"type": "text"}}})


def test_recursive_schema_with_deep_data() -> None:
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/T"}},
        "$defs": {
            "T": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/T"}}}}
        },
    }
    processor = compile_arguments(schema, max_depth=20)
    shallow = '{"tree": ' + '{"kids": [' * 9 + "{}" + "]}" * 9 + "}"
    assert processor(shallow)["tree"]["kids"][0]["kids"]
    deep = '{"tree": ' + '{"kids": [' * 15 + "{}" + "]}" * 15 + "}"
    assert "nested more than 20 levels" in str(_raises(processor, deep))


def test_importing_the_module_does_not_import_jsonschema() -> None:
    code = (
        "import sys\n"
        "from hermes_core.schema._args import compile_arguments\n"
        "p = compile_arguments({'type': 'object', 'properties': {'a': {'type': 'integer'}}, 'required': ['a']})\n"
        'p(\'{"a": 1}\'); p(\'{"a": "1"}\')\n'
        "try:\n    p('{}')\nexcept ValueError:\n    pass\n"
        "print('jsonschema' in sys.modules, 'fastjsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"
