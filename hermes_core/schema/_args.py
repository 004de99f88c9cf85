"""Tool arguments in one step: parse, coerce and validate what a model sent, or say precisely what is wrong.

``compile_arguments(schema)`` builds an ``ArgumentsProcessor`` once per tool; calling it costs one
``json`` scan plus a few generated type checks when the arguments are already right, and goes through
repair, coercion and full validation only when they are not. ``parse_tool_arguments`` and
``coerce_tool_args`` are the one-shot forms (they cache compiled processors by schema content).
"""

from __future__ import annotations

import json
import json.scanner
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, cast

from ._args_errors import ArgumentProblem, ToolArgumentError, describe
from ._args_fast import build_fast_checks, static_depth
from ._parse import _no_duplicates, check_shape, count_keys, parse_raw_arguments
from ._validate import Limits, canonical, compile_schema

__all__ = [
    "ArgumentProblem",
    "ArgumentsProcessor",
    "ToolArgumentError",
    "coerce_tool_args",
    "compile_arguments",
    "parameters_schema",
    "parse_tool_arguments",
    "value_problems",
]

MAX_LENGTH = 1_000_000
MAX_STRING = 262_144
MAX_DEPTH = 100
MAX_ITEMS = 10_000
_CACHE_SIZE = 256
_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


class _Refused(Exception):
    pass


def _refuse(name: str) -> Any:
    raise _Refused(name)


_scan = cast(
    Callable[[str, int], tuple[Any, int]],
    json.scanner.make_scanner(json.JSONDecoder(parse_constant=_refuse)),  # type: ignore[arg-type]
)


_pairs_decoder = json.JSONDecoder(object_pairs_hook=_no_duplicates)


def _no_duplicate_keys(text: str) -> bool:
    """Re-decode with a duplicate-key hook (only when colons inside strings make the cheap count ambiguous)."""
    try:
        _pairs_decoder.decode(text)
    except Exception:
        return False
    return True


def parameters_schema(schema: Mapping[str, Any]) -> Any:
    """The parameters JSON Schema of a tool schema, or ``schema`` itself when it is already one.

    Understands ``{"name", "description", "parameters"}``, the OpenAI ``{"type": "function", "function": ...}``
    wrapper, Anthropic's ``input_schema`` and MCP's ``inputSchema``.
    """
    if not isinstance(schema, Mapping):
        return schema
    if schema.get("type") == "function" and isinstance(schema.get("function"), Mapping):
        schema = schema["function"]
    if "properties" in schema or ("type" in schema and schema.get("type") != "function"):
        return schema
    for key in ("parameters", "input_schema", "inputSchema"):
        if key in schema:
            inner = schema[key]
            return _EMPTY_OBJECT if inner is None else inner
    return schema


class ArgumentsProcessor:
    """Parse + coerce + validate a tool's arguments; build with ``compile_arguments``.

    ``processor(raw)`` takes a JSON ``str``, UTF-8 ``bytes``, an already-decoded ``dict`` or ``None`` and returns
    the arguments dict to call the handler with, or raises ``ToolArgumentError``. ``processor.coerce(args)``
    runs coercion alone.
    """

    __slots__ = (
        "_check_shape_first",
        "_ok",
        "_root",
        "max_depth",
        "max_items",
        "max_length",
        "max_string",
        "schema",
    )

    def __init__(
        self,
        schema: Mapping[str, Any],
        *,
        max_length: int = MAX_LENGTH,
        max_string: int = MAX_STRING,
        max_depth: int = MAX_DEPTH,
        max_items: int = MAX_ITEMS,
    ) -> None:
        self.schema = parameters_schema(schema)
        self.max_length = max_length
        self.max_string = max_string
        self.max_depth = max_depth
        self.max_items = max_items
        limits = Limits(max_string, max_items)
        self._root, nodes = compile_schema(self.schema, limits)
        build_fast_checks(nodes, limits)
        self._ok = self._root.ok
        self._check_shape_first = static_depth(self._root) > max_depth

    def __call__(self, raw: Any) -> dict[str, Any]:
        """The arguments to call the handler with (a new dict), or ``ToolArgumentError``."""
        kind = type(raw)
        if kind is str:
            if len(raw) <= self.max_length:
                try:
                    value, end = _scan(raw, 0)
                except Exception:  # not plain JSON from the first character: repair mode
                    return self._slow(raw)
                if (
                    end == len(raw)
                    and type(value) is dict
                    and (not self._check_shape_first or check_shape(value, self.max_depth) is None)
                    and self._ok(value)
                ):
                    colons = raw.count(":")
                    # each key is followed by one colon; more colons than keys may hide a duplicate key
                    if colons == len(value) or colons == count_keys(value) or _no_duplicate_keys(raw):
                        return value
        elif (
            kind is dict
            and (not self._check_shape_first or check_shape(raw, self.max_depth) is None)
            and self._ok(raw)
        ):
            return dict(raw)
        return self._slow(raw)

    def _slow(self, raw: Any) -> dict[str, Any]:
        root = self._root
        value = parse_raw_arguments(
            raw, max_length=self.max_length, max_depth=self.max_depth, unwrap_key=self._is_wrapper
        )
        result = root.coerce(value)
        if result is not value:
            shape = check_shape(result, self.max_depth)
            if shape is not None:
                raise ToolArgumentError.single("$", "a JSON object", "too deeply nested JSON", shape)
        problems = root.problems(result)
        if problems:
            raise ToolArgumentError(problems)
        if result is raw:
            result = dict(result)
        return dict(result) if not isinstance(result, dict) else result

    def _is_wrapper(self, value: dict[str, Any]) -> bool:
        return "arguments" not in self._root.known

    def coerce(self, args: Any) -> dict[str, Any]:
        """Coercion only: a new dict with values converted toward the schema and unknown keys dropped."""
        if not isinstance(args, dict):
            raise ToolArgumentError(
                [
                    ArgumentProblem(
                        "$", "a JSON object", describe(args), f"expected a JSON object, got {describe(args)}"
                    )
                ]
            )
        shape = check_shape(args, self.max_depth)
        if shape is not None:
            raise ToolArgumentError.single("$", "a JSON object", "too deeply nested JSON", shape)
        result = self._root.coerce(args)
        return dict(result) if result is args or not isinstance(result, dict) else result


def compile_arguments(
    schema: Mapping[str, Any],
    *,
    max_length: int = MAX_LENGTH,
    max_string: int = MAX_STRING,
    max_depth: int = MAX_DEPTH,
    max_items: int = MAX_ITEMS,
) -> ArgumentsProcessor:
    """Build the processor for one tool's schema (a tool schema or a bare parameters schema). Build it once.

    Caps: ``max_length`` characters of raw input (checked before parsing), ``max_string`` characters per string
    value, ``max_depth`` levels of nesting and ``max_items`` items per array. Raises ``ValueError`` when the
    schema cannot be compiled (non-local or dangling ``$ref``, invalid pattern, unknown type).
    """
    return ArgumentsProcessor(
        schema, max_length=max_length, max_string=max_string, max_depth=max_depth, max_items=max_items
    )


_cache: OrderedDict[str, ArgumentsProcessor] = OrderedDict()
_cache_lock = threading.Lock()


def _processor_for(schema: Mapping[str, Any]) -> ArgumentsProcessor:
    key = canonical(schema)
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    processor = compile_arguments(schema)
    with _cache_lock:
        _cache[key] = processor
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return processor


def parse_tool_arguments(schema: Mapping[str, Any], raw: Any) -> dict[str, Any]:
    """Parse, coerce *and validate* ``raw`` (str, bytes, dict or None) against ``schema``; return the arguments.

    Raises ``ToolArgumentError`` (a ``ValueError``) whose message is what the model should be told. For
    repeated calls, build a processor once with ``compile_arguments`` instead.
    """
    return _processor_for(schema)(raw)


def coerce_tool_args(schema: Mapping[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """Coerce ``args`` toward ``schema`` (no validation); returns a new dict and never mutates ``args``.

    Unknown keys are dropped where the schema declares ``properties`` and no ``additionalProperties``; values
    that cannot be converted are left as they are (validation reports them).
    """
    return _processor_for(schema).coerce(args)


def value_problems(schema: Mapping[str, Any], value: Any) -> list[ArgumentProblem]:
    """Every way ``value`` breaks the JSON Schema ``schema``, nothing coerced: for data that is not a model's
    arguments (a plugin's configuration section). Raises ``ValueError`` for a schema that cannot be compiled."""
    root, _ = compile_schema(schema, Limits(MAX_STRING, MAX_ITEMS))
    return root.problems(value)
