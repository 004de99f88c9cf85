"""Turn the raw ``arguments`` a model sent into a dict, repairing what LLMs commonly get wrong.

Repaired: surrounding whitespace, a BOM, a markdown code fence, trailing commas, Python literals (single
quotes, True/False/None), raw newlines in strings, a JSON string holding the object (up to three times
encoded) and an ``{"arguments": ...}`` wrapper. Refused with a clear message: truncated JSON, concatenated
values, duplicate keys, trailing garbage, NaN/Infinity, nesting deeper than the limit, bytes that are not
UTF-8, and a top level that is not an object. Every step is linear in the input, whose length is capped
before anything else happens.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from ._args_errors import ArgumentProblem, ToolArgumentError, describe

__all__ = ["check_shape", "count_keys", "parse_raw_arguments", "parse_text"]

_MAX_ENCODINGS = 3  # how many times a model may have JSON-encoded the object into a string


class _Refusal(Exception):
    """Raised from inside the JSON decoder hooks; turned into a ``ToolArgumentError`` by the caller."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _refuse_constant(name: str) -> Any:
    raise _Refusal(f"{name} is not allowed in the arguments (use a finite number or a string)")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Refusal(f"the number {text[:40]} is too large (it would be Infinity)")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                shown = json.dumps(key[:40], ensure_ascii=False)
                raise _Refusal(f"duplicate key {shown} in the arguments (send each field once)")
            seen.add(key)
    return result


_STRICT = json.JSONDecoder(
    object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant, parse_float=_finite_float
)


def _fail(message: str, got: str = "malformed JSON") -> ToolArgumentError:
    return ToolArgumentError([ArgumentProblem("$", "a JSON object", got, message)])


# ---------------------------------------------------------------------------------------------- text cleanup


def _strip(text: str) -> str:
    return text.strip().lstrip("\ufeff").strip()


_LANGUAGE = re.compile(r"[A-Za-z0-9_+-]*")


def _unfence(text: str) -> str:
    """Drop a surrounding markdown code fence (```json ... ```), closed or not."""
    if not text.startswith("```"):
        return text
    newline = text.find("\n")
    if newline < 0:  # everything on one line: ```{"a": 1}```
        body = text[3:]
        body = body[_LANGUAGE.match(body).end() :]  # type: ignore[union-attr]
    else:
        body = text[newline + 1 :]
    body = body.rstrip()
    if body.endswith("```"):
        body = body[:-3]
    return body.strip()


# ------------------------------------------------------------------------------------------ relaxed JSON

_TOKEN = re.compile(
    r"""
      (?P<dq>"(?:[^"\\]|\\.)*\\?(?:"|\Z))
    | (?P<sq>'(?:[^'\\]|\\.)*\\?(?:'|\Z))
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<comma>,\s*(?=[\]}]))
    | (?P<other>[^"'A-Za-z_,]+|.)
    """,
    re.VERBOSE | re.DOTALL,
)
_CONTROL = {i: f"\\u{i:04x}" for i in range(0x20)} | {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}
_PY_WORDS = {"True": "true", "False": "false", "None": "null"}
_SQ_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|.)|\"", re.DOTALL)


def _sq_escape(match: re.Match[str]) -> str:
    text = match.group(0)
    if text == '"':
        return '\\"'
    body = match.group(1)
    if body == "'":
        return "'"
    if body.startswith("x") and len(body) == 3:
        return f"\\u00{body[1:]}"
    return text


def _relax(text: str) -> str:
    """Rewrite JSON-ish text (Python literals, trailing commas, raw control characters) as strict JSON."""
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        token = match.group(0)
        if kind == "dq":
            out.append(token.translate(_CONTROL))
        elif kind == "sq":
            if len(token) < 2 or not token.endswith("'"):  # unterminated: leave it for the decoder to refuse
                out.append(token)
                continue
            body = _SQ_ESCAPE.sub(_sq_escape, token[1:-1])
            out.append('"' + body.translate(_CONTROL) + '"')
        elif kind == "word":
            out.append(_PY_WORDS.get(token, token))
        elif kind != "comma":
            out.append(token)
    return "".join(out)


# ------------------------------------------------------------------------------------------------ decoding


def _decode(text: str) -> Any:
    """Strict decoding; raises ``_Refusal`` (hooks), ``json.JSONDecodeError`` or ``RecursionError``."""
    return _STRICT.decode(text)


def _syntax_error(text: str, error: json.JSONDecodeError) -> ToolArgumentError:
    if error.msg == "Extra data":
        rest = text[error.pos :].lstrip()
        if rest[:1] in ("{", "[", '"'):
            return _fail(
                "the arguments hold several JSON values one after another; send exactly one JSON object",
                "concatenated JSON values",
            )
        shown = describe(rest)
        return _fail(
            f"unexpected text after the JSON object at character {error.pos}: {shown}", "trailing garbage"
        )
    if error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string"):
        return _fail(
            f"the arguments JSON is truncated (it ends before the object is complete, at character "
            f"{len(text)}); send the complete JSON object",
            "truncated JSON",
        )
    return _fail(f"the arguments are not valid JSON: {error.msg} at line {error.lineno} column {error.colno}")


def parse_text(text: str) -> Any:
    """Decode one JSON text, trying the relaxed rewrite when strict decoding fails on syntax."""
    text = _unfence(_strip(text))
    if not text:
        return None
    try:
        return _decode(text)
    except _Refusal as refusal:
        raise _fail(refusal.message, "refused JSON") from None
    except RecursionError:
        raise _fail("the arguments are nested too deeply", "too deeply nested JSON") from None
    except json.JSONDecodeError as error:
        first = error
    try:
        return _decode(_relax(text))
    except _Refusal as refusal:
        raise _fail(refusal.message, "refused JSON") from None
    except RecursionError:
        raise _fail("the arguments are nested too deeply", "too deeply nested JSON") from None
    except json.JSONDecodeError as error:
        if error.msg == "Extra data" and first.msg != "Extra data":
            raise _syntax_error(text, error) from None
    raise _syntax_error(text, first) from None


def _unwrap_strings(value: Any) -> Any:
    """A JSON string that itself holds JSON (double or triple encoded) is decoded again."""
    for _ in range(_MAX_ENCODINGS):
        if not isinstance(value, str):
            return value
        inner = _unfence(_strip(value))
        if inner[:1] not in ("{", "[", '"', "'") and inner not in ("", "null"):
            return value
        value = parse_text(inner)
    return value


def count_keys(value: Any) -> int:
    """How many object keys the decoded value holds, all levels together."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            total += len(item)
            stack.extend(v for v in item.values() if type(v) is dict or type(v) is list)
        elif type(item) is list:
            stack.extend(v for v in item if type(v) is dict or type(v) is list)
    return total


def colons_inside(value: Any) -> int:
    """How many ":" the decoded value's keys and strings hold, all levels together."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            total += sum(key.count(":") for key in item)
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
        elif type(item) is str:
            total += item.count(":")
    return total


def check_shape(value: Any, max_depth: int, max_nodes: int = 2_000_000) -> str | None:
    """Why the value is too deep or too large to process, or None when it is fine.

    Containers may be nested at most ``max_depth`` levels (a cycle counts as too deep); at most ``max_nodes``
    values are visited in all, so a dict built in code that shares sub-objects cannot blow up later work.
    """
    level: list[Any] = [value]
    depth = 0
    seen = 0
    while level:
        depth += 1
        if depth > max_depth:
            return f"the arguments are nested more than {max_depth} levels deep"
        following: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            seen += len(children)
            if seen > max_nodes:
                return f"the arguments hold more than {max_nodes} values"
            following.extend(v for v in children if isinstance(v, dict | list | tuple))
        level = following
    return None


def parse_raw_arguments(
    raw: Any,
    *,
    max_length: int,
    max_depth: int,
    unwrap_key: Callable[[dict[str, Any]], bool] | None = None,
) -> dict[str, Any]:
    """Parse what the model sent (``str``, UTF-8 ``bytes``, an already-decoded ``dict`` or ``None``) into a dict.

    ``None`` and empty input mean ``{}``. ``unwrap_key(obj)`` decides whether a lone ``"arguments"`` key is a
    wrapper to remove (it is not when the schema itself has such a field). Raises ``ToolArgumentError``.
    """
    if raw is None:
        return {}
    if isinstance(raw, bytes | bytearray | memoryview):
        data = bytes(raw)
        if len(data) > max_length:
            raise _too_long(len(data), max_length)
        try:
            raw = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _fail(
                f"the arguments are not valid UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})",
                "bytes that are not UTF-8",
            ) from None
    if isinstance(raw, str):
        if len(raw) > max_length:
            raise _too_long(len(raw), max_length)
        value = _unwrap_strings(parse_text(raw))
    elif isinstance(raw, dict):
        value = raw
    else:
        raise _fail(
            f"the arguments must be a JSON object (text), got a value of type {type(raw).__name__}",
            describe(raw),
        )
    for _ in range(_MAX_ENCODINGS):
        if not (isinstance(value, dict) and len(value) == 1 and "arguments" in value):
            break
        if unwrap_key is not None and not unwrap_key(value):
            break
        inner = value["arguments"]
        if not isinstance(inner, dict | str) and inner is not None:
            break
        value = _unwrap_strings(inner)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ToolArgumentError(
            [
                ArgumentProblem(
                    "$", "a JSON object", describe(value), f"expected a JSON object, got {describe(value)}"
                )
            ]
        )
    shape = check_shape(value, max_depth)
    if shape is not None:
        raise _fail(shape, "too deeply nested or too large JSON")
    return value


def _too_long(length: int, limit: int) -> ToolArgumentError:
    return _fail(
        f"the arguments are too long ({length} characters; the limit is {limit})", f"{length} characters"
    )
