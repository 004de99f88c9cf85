"""Parsing raw tool arguments: the repairs LLMs need, and the refusals that keep calls honest."""

from __future__ import annotations

import json
import time

import pytest

from hermes_core.schema._args import ToolArgumentError, compile_arguments, parse_tool_arguments
from hermes_core.schema._parse import check_shape, count_keys, parse_raw_arguments

OPEN = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}}
LIMITS = {"max_length": 1_000_000, "max_depth": 100}


def parse(raw: object) -> dict[str, object]:
    return parse_tool_arguments(OPEN, raw)


def refusal(raw: object, schema: object = OPEN) -> str:
    with pytest.raises(ToolArgumentError) as caught:
        parse_tool_arguments(schema, raw)  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith("Invalid arguments for this tool: ")
    assert "Traceback" not in message and "http" not in message
    return message


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  \n\t{"a": 1}\n  ', {"a": 1}),
        ('\ufeff{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```\n', {"a": 1}),
        ('```json\n{"a": 1}', {"a": 1}),
        ('```{"a": 1}```', {"a": 1}),
        ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
        ("{'a': 'it\\'s', 'b': True, 'c': None}", {"a": "it's", "b": True, "c": None}),
        ("{'a': \"say \\\"hi\\\"\", 'b': False}", {"a": 'say "hi"', "b": False}),
        ("{'a': '\\x41'}", {"a": "A"}),
        ('{"a": "line one\nline two\ttab"}', {"a": "line one\nline two\ttab"}),
        (json.dumps(json.dumps({"a": 1})), {"a": 1}),
        (json.dumps(json.dumps(json.dumps({"a": 1}))), {"a": 1}),
        ('{"arguments": {"a": 1}}', {"a": 1}),
        ('{"arguments": "{\\"a\\": 2}"}', {"a": 2}),
        ('{"arguments": null}', {}),
        (b'{"a": "caf\xc3\xa9"}', {"a": "café"}),
        (bytearray(b'{"a": 1}'), {"a": 1}),
        ({"a": 1}, {"a": 1}),
        ("", {}),
        ("   ", {}),
        ("null", {}),
        (None, {}),
        (
            '{"a": "True, False and None stay text, so do \'quotes\'"}',
            {"a": "True, False and None stay text, so do 'quotes'"},
        ),
    ],
)
def test_accepts_and_repairs(raw: object, expected: dict[str, object]) -> None:
    assert parse(raw) == expected


def test_a_schema_field_called_arguments_is_not_a_wrapper() -> None:
    schema = {"type": "object", "properties": {"arguments": {"type": "object"}}}
    assert parse_tool_arguments(schema, '{"arguments": {"x": 1}}') == {"arguments": {"x": 1}}


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ('{"a": 1', "truncated"),
        ('{"a": "unfinished', "truncated"),
        ('{"a": [1, 2', "truncated"),
        ('{"a": 1}{"b": 2}', "several JSON values"),
        ('{"a": 1}\n{"b": 2}', "several JSON values"),
        ('{"a": 1} thanks!', "unexpected text after the JSON object"),
        ('{"a": 1, "a": 2}', 'duplicate key "a"'),
        ('{"b": {"x": 1, "x": 1}}', 'duplicate key "x"'),
        ("{'a': 1, 'a': 2}", 'duplicate key "a"'),
        ('{"a": NaN}', "NaN is not allowed"),
        ('{"a": Infinity}', "Infinity is not allowed"),
        ('{"a": -Infinity}', "Infinity is not allowed"),
        ('{"a": 1e999}', "too large"),
        ("[1, 2]", "expected a JSON object, got an array of 2 items"),
        ('"just text"', "expected a JSON object"),
        ("42", "expected a JSON object, got 42"),
        ("true", "expected a JSON object, got true"),
        (b'{"a": "\xff\xfe"}', "not valid UTF-8 (byte 0xff at offset 7)"),
        ('{"a": 1,, "b": 2}', "not valid JSON"),
        ("{a: 1}", "not valid JSON"),
        (12, "must be a JSON object"),
    ],
)
def test_refuses_with_a_clear_message(raw: object, needle: str) -> None:
    assert needle in refusal(raw)


def test_duplicate_key_hidden_behind_colons_in_values_is_caught() -> None:
    processor = compile_arguments({"type": "object", "properties": {"u": {"type": "string"}}})
    assert processor('{"u": "http://x"}') == {"u": "http://x"}
    with pytest.raises(ToolArgumentError, match="duplicate key"):
        processor('{"u": "http://x", "u": "http://evil"}')
    with pytest.raises(ToolArgumentError, match="duplicate key"):
        processor('{"u":"a","u":"b"}')


def test_depth_limit() -> None:
    ok = '{"a": ' + "[" * 98 + "]" * 98 + "}"
    assert parse(ok)["a"] == [[[]]] or parse(ok)["a"]
    deep = '{"a": ' + "[" * 100 + "]" * 100 + "}"
    assert "nested more than 100 levels" in refusal(deep)
    very_deep = '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"
    assert "nested" in refusal(very_deep)
    also_deep = "{'a': " + "[" * 5_000 + "]" * 5_000 + "}"
    assert "nested" in refusal(also_deep)


def test_depth_limit_is_a_parameter() -> None:
    processor = compile_arguments(OPEN, max_depth=3)
    assert processor('{"a": [[1]]}') == {"a": [[1]]}
    with pytest.raises(ToolArgumentError, match="nested more than 3 levels"):
        processor('{"a": [[[1]]]}')


def test_total_length_is_checked_before_parsing() -> None:
    processor = compile_arguments(OPEN, max_length=100)
    with pytest.raises(ToolArgumentError, match=r"too long \(101 characters; the limit is 100\)"):
        processor("x" * 101)
    with pytest.raises(ToolArgumentError, match="too long"):
        processor(b"[" * 101)
    assert processor('{"a": "' + "y" * 80 + '"}') == {"a": "y" * 80}


def test_cyclic_dict_input_is_refused() -> None:
    cyclic: dict[str, object] = {}
    cyclic["a"] = cyclic
    assert "nested" in refusal(cyclic)


def test_messages_never_echo_huge_input() -> None:
    message = refusal('{"a": 1} ' + "garbage " * 10_000)
    assert len(message) < 300
    message = refusal(b"\x80" * 5000)
    assert len(message) < 300


@pytest.mark.parametrize(
    "raw",
    [
        '"\\' * 200_000,
        "'\\" * 200_000,
        "{" * 300_000,
        "[" * 300_000,
        '{"a": "' + "\\u" * 200_000,
        "```" + "a" * 300_000 + " {",
        "," + " " * 500_000 + "x",
        '{"a":' + '"x",' * 100_000,
    ],
)
def test_adversarial_input_is_refused_quickly(raw: str) -> None:
    started = time.perf_counter()
    with pytest.raises(ToolArgumentError):
        parse(raw)
    assert time.perf_counter() - started < 2.0


def test_count_keys_and_check_shape() -> None:
    value = {"a": {"b": [{"c": 1}, {"d": 2, "e": 3}]}, "f": []}
    assert count_keys(value) == 6
    assert check_shape(value, 4) is None
    assert check_shape(value, 3) is not None
    shared = [1] * 1000
    wide = [shared] * 1000
    assert "more than" in (check_shape({"w": [wide] * 10}, 100, max_nodes=100_000) or "")


def test_parse_raw_arguments_leaves_the_input_alone() -> None:
    original = {"arguments": {"a": 1}}
    assert parse_raw_arguments(original, unwrap_key=lambda _: True, **LIMITS) == {"a": 1}
    assert original == {"arguments": {"a": 1}}
    assert parse_raw_arguments(original, unwrap_key=lambda _: False, **LIMITS) is original


def test_duplicate_keys_are_caught_whatever_the_colons_inside_hold() -> None:
    """The cheap path (colons counted in the parsed strings) accepts exactly what a full duplicate check
    accepts: escapes that spell a colon (\\u003a) send it to the full check."""
    import json as _json

    from hypothesis import given, settings
    from hypothesis import strategies as st

    processor = compile_arguments({"type": "object"})
    keys = st.sampled_from(["a", "b", "c:d", ":"])
    texts = st.text(
        alphabet=st.sampled_from(list('ab:"\\x\n\u00a7')), max_size=8
    )  # \u00a7: a ":" spelt \u003a
    pairs = st.lists(st.tuples(keys, texts), min_size=1, max_size=4)

    @settings(max_examples=300, deadline=None)
    @given(pairs=pairs)
    def check(pairs: list[tuple[str, str]]) -> None:
        body = ", ".join(f"{_json.dumps(k)}: {_json.dumps(v)}" for k, v in pairs)
        raw = "{" + body.replace("\\u00a7", "\\u003a") + "}"
        try:
            decoded = _json.loads(raw, object_pairs_hook=lambda items: items)
        except ValueError:
            return
        has_duplicate = len({k for k, _ in decoded}) < len(decoded)
        if has_duplicate:
            with pytest.raises(ToolArgumentError, match="duplicate key"):
                processor(raw)
        else:
            assert processor(raw) == dict(decoded)

    check()
