"""Compile a tool's JSON Schema into nodes that coerce, validate and fast-check argument values.

Each ``Node`` offers three things:

* ``coerce(value)``: a best-effort conversion toward the schema (a new value; the input is never mutated);
* ``check(value, path, out)``: append an ``ArgumentProblem`` per violation (path, expected, got);
* ``ok(value)``: a generated function that is True only when the value is valid *and* coercion would leave
  it unchanged, so the common already-correct call costs a few type checks.

Supported keywords: type (lists, "null", OpenAPI ``nullable``), properties, required, additionalProperties,
patternProperties, items, prefixItems, additionalItems, enum, const, anyOf, oneOf, allOf, not, minimum,
maximum, exclusiveMinimum/Maximum, multipleOf, minLength, maxLength, pattern, minItems, maxItems,
uniqueItems, minProperties, maxProperties and local ``$ref`` (``#/$defs/...``, ``#/definitions/...``, any local
JSON pointer). ``format`` and ``default`` are ignored (defaults are never injected). Any other validation
keyword is checked by ``jsonschema``, imported lazily the first time such a value is seen.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote

from ._args_errors import ArgumentProblem, describe, join_path
from ._coerce import CONVERTERS, MISSING, json_type

__all__ = ["Limits", "Node", "compile_schema"]

_FALLBACK_KEYWORDS = frozenset(
    {
        "if",
        "then",
        "else",
        "propertyNames",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "contains",
        "minContains",
        "maxContains",
        "unevaluatedProperties",
        "unevaluatedItems",
        "$dynamicRef",
        "$recursiveRef",
    }
)
_OBJECT_KEYWORDS = ("properties", "required", "additionalProperties", "patternProperties")
_ARRAY_KEYWORDS = ("items", "prefixItems", "additionalItems")
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "format",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_SCALARS = frozenset({"string", "integer", "number", "boolean", "null"})
_KNOWN_TYPES = _SCALARS | {"object", "array"}
_MAX_ENUM_SHOWN = 8


class Limits:
    """Size caps applied while coercing and validating."""

    __slots__ = ("free", "max_items", "max_string")

    def __init__(self, max_string: int, max_items: int) -> None:
        self.max_string = max_string
        self.max_items = max_items
        self.free = Node(-1, self)  # checks values no schema describes: caps and finite numbers only


def _freeze(value: Any) -> Any:
    """A hashable key with JSON equality: 1 == 1.0, but true != 1 and "1" != 1."""
    kind = type(value)
    if kind is bool or value is None:
        return ("b", value)
    if kind is int or kind is float:
        return ("n", value)
    if kind is str:
        return ("s", value)
    if kind is list or kind is tuple:
        return ("a", tuple(_freeze(v) for v in value))
    if kind is dict:
        return ("o", frozenset((k, _freeze(v)) for k, v in value.items()))
    return ("?", id(value))


def _is_multiple(value: float, step: float) -> bool:
    """Exact decimal divisibility of the numbers as written: 0.3 is a multiple of 0.1, 1e-100 is not of 2."""
    if type(value) is int and type(step) is int:
        return step != 0 and value % step == 0
    from decimal import Decimal, localcontext

    try:
        with localcontext() as ctx:
            ctx.prec = 800  # enough for any quotient of two finite floats
            return Decimal(repr(value)) % Decimal(repr(step)) == 0
    except (ValueError, ArithmeticError):
        return False


def _render(value: Any) -> str:
    return describe(value)


class Node:
    """One compiled (sub)schema. Built by ``compile_schema``; see the module docstring."""

    __slots__ = (
        "_accepts_null",
        "_fallback",
        "additional",
        "additional_items",
        "all_of",
        "any_of",
        "coerce_types",
        "const",
        "declares_properties",
        "drop_unknown",
        "enum",
        "enum_keys",
        "exclusive_maximum",
        "exclusive_minimum",
        "fallback_schema",
        "index",
        "items",
        "known",
        "limits",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "not_",
        "ok",
        "one_of",
        "pattern",
        "pattern_properties",
        "prefix",
        "properties",
        "required",
        "types",
        "unique_items",
    )

    def __init__(self, index: int, limits: Limits) -> None:
        self.index = index
        self.limits = limits
        self.types: tuple[str, ...] | None = None
        self.coerce_types: tuple[str, ...] = ()
        self.enum: list[Any] | None = None
        self.enum_keys: frozenset[Any] = frozenset()
        self.const: Any = MISSING
        self.minimum: float | None = None
        self.maximum: float | None = None
        self.exclusive_minimum: float | None = None
        self.exclusive_maximum: float | None = None
        self.multiple_of: float | None = None
        self.min_length: int | None = None
        self.max_length: int | None = None
        self.pattern: re.Pattern[str] | None = None
        self.properties: dict[str, Node] = {}
        self.declares_properties = False
        self.required: tuple[str, ...] = ()
        self.additional: Node | bool | None = None
        self.pattern_properties: list[tuple[re.Pattern[str], Node]] = []
        self.drop_unknown = False
        self.known: frozenset[str] = frozenset()
        self.min_properties: int | None = None
        self.max_properties: int | None = None
        self.items: Node | None = None
        self.prefix: list[Node] = []
        self.additional_items: Node | bool | None = None
        self.min_items: int | None = None
        self.max_items: int | None = None
        self.unique_items = False
        self.all_of: list[Node] = []
        self.any_of: list[Node] = []
        self.one_of: list[Node] = []
        self.not_: Node | None = None
        self.fallback_schema: dict[str, Any] | None = None
        self._fallback: Any = None
        self._accepts_null: bool | None = None
        self.ok: Callable[[Any], bool] = _never

    # ------------------------------------------------------------------------------------------ describing

    def expected(self) -> str:
        """What this node wants, in a few words: ``integer``, ``string or null``, ``one of "a", "b"``."""
        if self.types is not None and not self.types:
            return "no value (this field is not allowed)"
        if self.enum is not None:
            shown = ", ".join(_render(v) for v in self.enum[:_MAX_ENUM_SHOWN])
            more = ", ..." if len(self.enum) > _MAX_ENUM_SHOWN else ""
            return f"one of {shown}{more}"
        if self.const is not MISSING:
            return _render(self.const)
        if self.types:
            names = list(self.types)
            return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        branches = self.any_of or self.one_of
        if branches:
            return " or ".join(dict.fromkeys(b.expected() for b in branches))
        if self.all_of:
            return self.all_of[0].expected()
        return "a valid value"

    @property
    def accepts_null(self) -> bool:
        """Whether null is a valid value here (then an explicit null is kept rather than dropped)."""
        if self._accepts_null is None:
            self._accepts_null = not self.problems(None)
        return self._accepts_null

    # ------------------------------------------------------------------------------------------ coercion

    def coerce(self, value: Any) -> Any:
        """Convert ``value`` toward this schema where that is unambiguous; return it unchanged otherwise."""
        if self.ok(value):
            return value
        value = self._coerce_own(value)
        for sub in self.all_of:
            value = sub.coerce(value)
        if self.any_of:
            value = _pick(self.any_of, value)
        if self.one_of:
            value = _pick(self.one_of, value)
        return value

    def _coerce_own(self, value: Any) -> Any:
        kind = json_type(value)
        targets = self.coerce_types
        if self.types is None or kind in targets or (kind == "integer" and "number" in targets):
            if self.enum is not None and _freeze(value) not in self.enum_keys:
                return self._coerce_to_enum(value)
            return self._coerce_inside(value)
        for target in targets:
            converted = CONVERTERS[target](value)
            if converted is not MISSING:
                return self._coerce_inside(converted)
        return value

    def _coerce_to_enum(self, value: Any) -> Any:
        for target in dict.fromkeys(t for t in (json_type(v) for v in self.enum or ()) if t in CONVERTERS):
            converted = CONVERTERS[target](value)
            if converted is not MISSING and _freeze(converted) in self.enum_keys:
                return converted
        return self._coerce_inside(value)

    def _coerce_inside(self, value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            return self._coerce_object(value)
        if kind is list:
            return self._coerce_array(value)
        return value

    def _coerce_object(self, value: dict[Any, Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        properties = self.properties
        required = self.required
        for key, item in value.items():
            node = properties.get(key) if type(key) is str else None
            if node is not None:
                if item is None and key not in required and not node.accepts_null:
                    continue  # an explicit null on an optional field means "absent"
                out[key] = node.coerce(item)
                continue
            if key in self.known:
                out[key] = item
                continue
            matched = False
            for pattern, sub in self.pattern_properties:
                if type(key) is str and pattern.search(key):
                    item = sub.coerce(item)
                    matched = True
            if matched:
                out[key] = item
            elif self.drop_unknown:
                continue  # never honour a field the schema does not declare
            elif isinstance(self.additional, Node):
                out[key] = self.additional.coerce(item)
            else:
                out[key] = item
        return out

    def _coerce_array(self, value: list[Any]) -> list[Any]:
        if len(value) > self.limits.max_items:
            return value
        prefix = self.prefix
        rest = self.items
        if rest is None and isinstance(self.additional_items, Node):
            rest = self.additional_items
        out = []
        for i, item in enumerate(value):
            node = prefix[i] if i < len(prefix) else rest
            out.append(item if node is None else node.coerce(item))
        return out

    # ---------------------------------------------------------------------------------------- validation

    def problems(self, value: Any, path: str = "$") -> list[ArgumentProblem]:
        """Every violation of this schema by ``value``."""
        out: list[ArgumentProblem] = []
        self.check(value, path, out)
        return out

    def check(self, value: Any, path: str, out: list[ArgumentProblem]) -> None:
        """Append a problem to ``out`` for each way ``value`` violates this schema."""
        kind = json_type(value)
        if self.types is not None and not _type_matches(kind, self.types, value):
            out.append(ArgumentProblem(path, self.expected(), describe(value)))
            return
        if kind is None:
            out.append(ArgumentProblem(path, "a JSON value", describe(value)))
            return
        if self.enum is not None and _freeze(value) not in self.enum_keys:
            out.append(ArgumentProblem(path, self.expected(), describe(value)))
            return
        if self.const is not MISSING and _freeze(value) != _freeze(self.const):
            out.append(ArgumentProblem(path, _render(self.const), describe(value)))
            return
        if kind == "string":
            self._check_string(value, path, out)
        elif kind == "integer" or kind == "number":
            self._check_number(value, path, out)
        elif kind == "object":
            self._check_object(value, path, out)
        elif kind == "array":
            self._check_array(value, path, out)
        for sub in self.all_of:
            sub.check(value, path, out)
        if self.any_of:
            self._check_branches(self.any_of, value, path, out, exactly_one=False)
        if self.one_of:
            self._check_branches(self.one_of, value, path, out, exactly_one=True)
        if self.not_ is not None and not self.not_.problems(value, path):
            out.append(ArgumentProblem(path, f"not {self.not_.expected()}", describe(value)))
        if self.fallback_schema is not None:
            self._check_fallback(value, path, out)

    def _check_string(self, value: str, path: str, out: list[ArgumentProblem]) -> None:
        n = len(value)
        if n > self.limits.max_string:
            out.append(
                ArgumentProblem(
                    path, f"a string of at most {self.limits.max_string} characters", f"{n} characters"
                )
            )
            return
        if self.min_length is not None and n < self.min_length:
            out.append(
                ArgumentProblem(path, f"a string of at least {self.min_length} characters", describe(value))
            )
        if self.max_length is not None and n > self.max_length:
            out.append(
                ArgumentProblem(path, f"a string of at most {self.max_length} characters", f"{n} characters")
            )
        if self.pattern is not None and self.pattern.search(value) is None:
            shown = describe(self.pattern.pattern)
            out.append(ArgumentProblem(path, f"a string matching the pattern {shown}", describe(value)))

    def _check_number(self, value: float, path: str, out: list[ArgumentProblem]) -> None:
        if type(value) is float and not math.isfinite(value):
            out.append(ArgumentProblem(path, "a finite number", describe(value)))
            return
        got = describe(value)
        if self.minimum is not None and value < self.minimum:
            out.append(ArgumentProblem(path, f"a number >= {_render(self.minimum)}", got))
        if self.exclusive_minimum is not None and value <= self.exclusive_minimum:
            out.append(ArgumentProblem(path, f"a number > {_render(self.exclusive_minimum)}", got))
        if self.maximum is not None and value > self.maximum:
            out.append(ArgumentProblem(path, f"a number <= {_render(self.maximum)}", got))
        if self.exclusive_maximum is not None and value >= self.exclusive_maximum:
            out.append(ArgumentProblem(path, f"a number < {_render(self.exclusive_maximum)}", got))
        if self.multiple_of is not None and not _is_multiple(value, self.multiple_of):
            out.append(ArgumentProblem(path, f"a multiple of {_render(self.multiple_of)}", got))

    def _check_object(self, value: dict[Any, Any], path: str, out: list[ArgumentProblem]) -> None:
        for key, item in value.items():
            if type(key) is not str:
                out.append(ArgumentProblem(path, "string keys", f"the key {describe(key)}"))
                continue
            where = join_path(path, key)
            node = self.properties.get(key)
            if node is not None:
                node.check(item, where, out)
                continue
            matched = False
            for pattern, sub in self.pattern_properties:
                if pattern.search(key):
                    matched = True
                    sub.check(item, where, out)
            if matched or key in self.known:
                continue
            if self.additional is False:
                out.append(
                    ArgumentProblem(where, "no such field", describe(item), f"unexpected field {where!r}")
                )
            elif isinstance(self.additional, Node):
                self.additional.check(item, where, out)
            else:
                self.limits.free.check(item, where, out)
        for name in self.required:
            if name not in value:
                where = join_path(path, name)
                out.append(ArgumentProblem(where, "a value", "nothing", f"missing required field {where!r}"))
        n = len(value)
        if self.min_properties is not None and n < self.min_properties:
            out.append(
                ArgumentProblem(
                    path, f"an object with at least {self.min_properties} fields", describe(value)
                )
            )
        if self.max_properties is not None and n > self.max_properties:
            out.append(
                ArgumentProblem(path, f"an object with at most {self.max_properties} fields", describe(value))
            )

    def _check_array(self, value: list[Any], path: str, out: list[ArgumentProblem]) -> None:
        n = len(value)
        if n > self.limits.max_items:
            out.append(
                ArgumentProblem(path, f"an array of at most {self.limits.max_items} items", f"{n} items")
            )
            return
        if self.min_items is not None and n < self.min_items:
            out.append(ArgumentProblem(path, f"an array of at least {self.min_items} items", describe(value)))
        if self.max_items is not None and n > self.max_items:
            out.append(ArgumentProblem(path, f"an array of at most {self.max_items} items", describe(value)))
        if self.unique_items and len({_freeze(v) for v in value}) != n:
            out.append(ArgumentProblem(path, "an array of unique items", "an array with repeated items"))
        prefix = self.prefix
        for i, item in enumerate(value):
            if i < len(prefix):
                prefix[i].check(item, join_path(path, i), out)
            elif self.items is not None:
                self.items.check(item, join_path(path, i), out)
            elif self.additional_items is False and prefix:
                out.append(ArgumentProblem(path, f"an array of at most {len(prefix)} items", f"{n} items"))
                break
            elif isinstance(self.additional_items, Node):
                self.additional_items.check(item, join_path(path, i), out)
            else:
                self.limits.free.check(item, join_path(path, i), out)

    def _check_branches(
        self, branches: list[Node], value: Any, path: str, out: list[ArgumentProblem], *, exactly_one: bool
    ) -> None:
        results = [b.problems(value, path) for b in branches]
        passed = sum(1 for r in results if not r)
        if passed == 1 or (passed > 1 and not exactly_one):
            return
        if passed > 1:
            out.append(
                ArgumentProblem(
                    path, "a value matching exactly one allowed form", f"{describe(value)} (matches {passed})"
                )
            )
            return
        kind = json_type(value)
        same_type = [
            r
            for b, r in zip(branches, results, strict=True)
            if b.types is None or _type_matches(kind, b.types, value)
        ]
        if len(same_type) == 1 and not (len(same_type[0]) == 1 and same_type[0][0].path == path):
            out.extend(same_type[0])
            return
        out.append(ArgumentProblem(path, self._branches_expected(branches), describe(value)))

    @staticmethod
    def _branches_expected(branches: list[Node]) -> str:
        return " or ".join(dict.fromkeys(b.expected() for b in branches))

    def _check_fallback(self, value: Any, path: str, out: list[ArgumentProblem]) -> None:
        if self._fallback is None:
            import jsonschema

            cls = jsonschema.validators.validator_for(
                self.fallback_schema, default=jsonschema.Draft202012Validator
            )
            self._fallback = cls(self.fallback_schema)
        for count, error in enumerate(self._fallback.iter_errors(value)):
            if count >= 5:
                break
            where = path
            for part in error.absolute_path:
                where = join_path(where, part)
            out.append(
                ArgumentProblem(where, f"a value satisfying {error.validator!r}", describe(error.instance))
            )


def _never(value: Any) -> bool:
    return False


def _type_matches(kind: str | None, types: tuple[str, ...], value: Any) -> bool:
    if kind in types or (kind == "integer" and "number" in types):
        return True
    # JSON Schema counts 2.0 as an integer (coercion turns it into 2 before validation anyway)
    return kind == "number" and "integer" in types and math.isfinite(value) and value.is_integer()


def _pick(branches: list[Node], value: Any) -> Any:
    for branch in branches:
        if branch.ok(value):
            return value
    # a branch the value already satisfies wins (normalised by it: unknown keys dropped); then any that fits
    fitting = [b for b in branches if not b.problems(value)]
    for branch in (*fitting, *branches):
        converted = branch.coerce(value)
        if not branch.problems(converted):
            return converted
    return value


# ------------------------------------------------------------------------------------------------ compiler


class _Compiler:
    def __init__(self, root: Any, limits: Limits) -> None:
        self.root = root
        self.limits = limits
        self.nodes: list[Node] = []
        self.memo: dict[tuple[int, bool], Node] = {}
        self.keep: list[Any] = []  # keeps compiled schema objects alive so their ids stay unique

    def resolve(self, ref: Any) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise ValueError(f"only local $ref values ('#/...') are supported, got {ref!r}")
        pointer = unquote(ref[1:])
        target: Any = self.root
        if not pointer:
            return target
        if not pointer.startswith("/"):
            raise ValueError(f"$ref anchors are not supported: {ref!r}")
        for raw in pointer[1:].split("/"):
            part = raw.replace("~1", "/").replace("~0", "~")
            try:
                target = target[int(part)] if isinstance(target, list) else target[part]
            except (KeyError, IndexError, ValueError, TypeError):
                raise ValueError(f"$ref {ref!r} does not point into the schema") from None
        return target

    def node(self, schema: Any, in_all_of: bool = False) -> Node:
        seen: set[int] = set()
        while isinstance(schema, dict) and "$ref" in schema and set(schema) - _ANNOTATIONS <= {"$ref"}:
            if id(schema) in seen:
                raise ValueError(f"circular $ref {schema['$ref']!r}")
            seen.add(id(schema))
            self.keep.append(schema)
            schema = self.resolve(schema["$ref"])
        key = (id(schema), in_all_of)
        found = self.memo.get(key)
        if found is not None:
            return found
        node = Node(len(self.nodes), self.limits)
        self.nodes.append(node)
        self.memo[key] = node
        self.keep.append(schema)
        self._fill(node, schema, in_all_of)
        return node

    def _fill(self, node: Node, schema: Any, in_all_of: bool) -> None:
        if schema is True:
            return
        if schema is False:
            node.types = ()
            return
        if not isinstance(schema, dict):
            raise ValueError(f"a schema must be an object or a boolean, got {type(schema).__name__}")
        self._fill_type(node, schema)
        self._fill_scalar(node, schema)
        self._fill_object(node, schema)
        self._fill_array(node, schema)
        if "$ref" in schema:
            node.all_of.append(self.node(self.resolve(schema["$ref"]), in_all_of=True))
        node.all_of.extend(self.node(s, in_all_of=True) for s in schema.get("allOf", ()))
        node.any_of = [self.node(s) for s in schema.get("anyOf", ())]
        node.one_of = [self.node(s) for s in schema.get("oneOf", ())]
        if "not" in schema:
            node.not_ = self.node(schema["not"])
        if _FALLBACK_KEYWORDS & schema.keys():
            node.fallback_schema = self._standalone(schema)
        known, has_properties, is_open = self._object_shape(node, set())
        node.known = frozenset(known)
        node.drop_unknown = has_properties and not is_open and not in_all_of

    def _fill_type(self, node: Node, schema: dict[str, Any]) -> None:
        declared = schema.get("type")
        if declared is not None:
            types = (declared,) if isinstance(declared, str) else tuple(declared)
            unknown = [t for t in types if t not in _KNOWN_TYPES]
            if unknown:
                raise ValueError(f"unknown JSON Schema type {unknown[0]!r}")
            if schema.get("nullable") is True and "null" not in types:
                types = (*types, "null")
            node.types = tuple(dict.fromkeys(types))
            node.coerce_types = node.types
        elif any(k in schema for k in _OBJECT_KEYWORDS):
            node.coerce_types = ("object",)
        elif any(k in schema for k in _ARRAY_KEYWORDS):
            node.coerce_types = ("array",)
        if "enum" in schema:
            node.enum = list(schema["enum"])
            node.enum_keys = frozenset(_freeze(v) for v in node.enum)
        if "const" in schema:
            node.const = schema["const"]

    def _fill_scalar(self, node: Node, schema: dict[str, Any]) -> None:
        node.minimum = schema.get("minimum")
        node.maximum = schema.get("maximum")
        low = schema.get("exclusiveMinimum")
        if low is True:  # draft 4: a flag on minimum
            node.exclusive_minimum, node.minimum = node.minimum, None
        elif type(low) in (int, float):
            node.exclusive_minimum = low
        high = schema.get("exclusiveMaximum")
        if high is True:
            node.exclusive_maximum, node.maximum = node.maximum, None
        elif type(high) in (int, float):
            node.exclusive_maximum = high
        node.multiple_of = schema.get("multipleOf")
        node.min_length = schema.get("minLength")
        node.max_length = schema.get("maxLength")
        if "pattern" in schema:
            try:
                node.pattern = re.compile(schema["pattern"])
            except (re.error, TypeError) as error:
                raise ValueError(f"invalid pattern {schema['pattern']!r}: {error}") from None

    def _fill_object(self, node: Node, schema: dict[str, Any]) -> None:
        node.declares_properties = "properties" in schema
        node.properties = {name: self.node(sub) for name, sub in schema.get("properties", {}).items()}
        node.required = tuple(schema.get("required", ()))
        extra = schema.get("additionalProperties")
        if extra is None or extra is False:
            node.additional = extra
        elif extra is True or extra == {}:
            node.additional = True
        else:
            node.additional = self.node(extra)
        for text, sub in schema.get("patternProperties", {}).items():
            try:
                node.pattern_properties.append((re.compile(text), self.node(sub)))
            except (re.error, TypeError) as error:
                raise ValueError(f"invalid patternProperties key {text!r}: {error}") from None
        node.min_properties = schema.get("minProperties")
        node.max_properties = schema.get("maxProperties")

    def _fill_array(self, node: Node, schema: dict[str, Any]) -> None:
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        if isinstance(items, list):  # draft 4 tuple form
            node.prefix = [self.node(s) for s in items]
            rest = schema.get("additionalItems")
            if rest is False:
                node.additional_items = False
            elif rest is not None and rest is not True:
                node.additional_items = self.node(rest)
        else:
            if prefix is not None:
                node.prefix = [self.node(s) for s in prefix]
            if items is False:
                node.additional_items = False
            elif items is not None and items is not True and items != {}:
                node.items = self.node(items)
        node.min_items = schema.get("minItems")
        node.max_items = schema.get("maxItems")
        node.unique_items = schema.get("uniqueItems") is True

    def _object_shape(self, node: Node, seen: set[int]) -> tuple[set[str], bool, bool]:
        """Property names known here or in allOf members, whether any are declared, whether extras are open."""
        seen.add(node.index)
        known = set(node.properties)
        has = node.declares_properties
        is_open = (
            node.additional is True or isinstance(node.additional, Node) or bool(node.pattern_properties)
        )
        for sub in node.all_of:
            if sub.index in seen:
                continue
            k, h, o = self._object_shape(sub, seen)
            known |= k
            has = has or h
            is_open = is_open or o
        return known, has, is_open

    def _standalone(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The subschema with the root's definitions attached, for the jsonschema fallback."""
        if not isinstance(self.root, dict):
            return schema
        extra = {k: self.root[k] for k in ("$defs", "definitions") if k in self.root and k not in schema}
        return {**schema, **extra}

    def check_cycles(self) -> None:
        """Refuse schemas that apply themselves to the same value forever (allOf/anyOf/... loops)."""
        state: dict[int, int] = {}

        def edges(n: Node) -> Iterator[Node]:
            yield from n.all_of
            yield from n.any_of
            yield from n.one_of
            if n.not_ is not None:
                yield n.not_

        for start in self.nodes:
            if state.get(start.index):
                continue
            stack: list[tuple[Node, Iterator[Node]]] = [(start, edges(start))]
            state[start.index] = 1
            while stack:
                current, children = stack[-1]
                child = next(children, None)
                if child is None:
                    state[current.index] = 2
                    stack.pop()
                    continue
                mark = state.get(child.index, 0)
                if mark == 1:
                    raise ValueError(
                        "the schema refers to itself without nesting (a $ref loop through allOf/anyOf/oneOf/not)"
                    )
                if mark == 0:
                    state[child.index] = 1
                    stack.append((child, edges(child)))


def compile_schema(schema: Any, limits: Limits) -> tuple[Node, list[Node]]:
    """Compile a parameters JSON Schema; return its root node and every node (``_args_fast.build_fast_checks``
    then gives each node its ``ok``).

    Raises ``ValueError`` for a schema that cannot be compiled (non-local or dangling ``$ref``, bad pattern,
    unknown type, self-application loop).
    """
    compiler = _Compiler(schema, limits)
    root = compiler.node(schema)
    compiler.check_cycles()
    return root, compiler.nodes


def canonical(schema: Any) -> str:
    """A stable text key for a schema (used to cache compiled forms)."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), default=repr)
