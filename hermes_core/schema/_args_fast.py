"""Generate each node's ``ok(value)``: True only if the value is valid *and* already in canonical form.

The generated code is plain type checks and comparisons (simple scalar properties are inlined), so the
common already-correct call costs well under a microsecond. ``ok`` may say False for a valid value (the
caller then takes the slow path, which is always right); it must never say True for a value that the
slow path would change or refuse. Keywords that are rare or hard to check cheaply (oneOf, not, prefixItems,
patternProperties, jsonschema fallbacks) make ``ok`` return False.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ._coerce import MISSING
from ._validate import Limits, Node, _freeze, _is_multiple

__all__ = ["build_fast_checks", "static_depth"]

_GUARD = {
    "string": "type({v}) is str",
    "integer": "type({v}) is int",
    "number": "(type({v}) is int or (type({v}) is float and -_inf < {v} < _inf))",
    "boolean": "type({v}) is bool",
    "null": "{v} is None",
}
_ENUM_MEMBER: dict[str, Callable[[Any], bool]] = {
    "string": lambda x: type(x) is str,
    "integer": lambda x: type(x) is int,
    "number": lambda x: type(x) is int or (type(x) is float and math.isfinite(x)),
    "boolean": lambda x: type(x) is bool,
    "null": lambda x: x is None,
}


def _conservative(node: Node) -> bool:
    return (
        node.fallback_schema is not None
        or bool(node.one_of)
        or node.not_ is not None
        or (node.types is not None and not node.types)
    )


def _takes_dict(node: Node) -> bool:
    if node.types is not None:
        return "object" in node.types
    return bool(
        node.declares_properties
        or node.required
        or node.additional is not None
        or node.pattern_properties
        or node.min_properties is not None
        or node.max_properties is not None
    )


def _takes_list(node: Node) -> bool:
    if node.types is not None:
        return "array" in node.types
    return bool(
        node.items is not None
        or node.prefix
        or node.additional_items is not None
        or node.min_items is not None
        or node.max_items is not None
        or node.unique_items
    )


class _Gen:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.ns: dict[str, Any] = {
            "_inf": math.inf,
            "_MISS": MISSING,
            "_is_multiple": _is_multiple,
            "_freeze": _freeze,
        }
        cap = limits.max_string

        def plain(x: Any) -> bool:
            kind = type(x)
            if kind is str:
                return len(x) <= cap
            if kind is float:
                return bool(-math.inf < x < math.inf)
            return kind is int or kind is bool or x is None

        def unique(v: list[Any]) -> bool:
            return len({_freeze(x) for x in v}) == len(v)

        self.ns["_plain"] = plain
        self.ns["_unique"] = unique

    def const(self, name: str, value: Any) -> str:
        self.ns[name] = value
        return name

    # ------------------------------------------------------------------------------------------ scalars

    def scalar_conds(self, node: Node, kind: str, v: str) -> list[str]:
        """Conditions for a value already known to be of Python type matching ``kind``."""
        i = node.index
        conds: list[str] = []
        if kind == "string":
            conds.append(f"len({v}) <= {int(self.limits.max_string)}")
            if node.min_length is not None:
                conds.append(f"len({v}) >= {self.const(f'minlen{i}', node.min_length)}")
            if node.max_length is not None:
                conds.append(f"len({v}) <= {self.const(f'maxlen{i}', node.max_length)}")
            if node.pattern is not None:
                conds.append(f"{self.const(f'pat{i}', node.pattern.search)}({v}) is not None")
        elif kind in ("integer", "number"):
            for attr, op in (
                ("minimum", ">="),
                ("maximum", "<="),
                ("exclusive_minimum", ">"),
                ("exclusive_maximum", "<"),
            ):
                bound = getattr(node, attr)
                if bound is not None:
                    conds.append(f"{v} {op} {self.const(f'{attr}{i}', bound)}")
            if node.multiple_of is not None:
                conds.append(f"_is_multiple({v}, {self.const(f'mult{i}', node.multiple_of)})")
        return conds

    def inline(self, node: Node, v: str) -> str | None:
        """One boolean expression for a simple scalar node, or None when it needs a function call."""
        if node.types is None or len(node.types) != 1 or node.types[0] not in _GUARD:
            return None
        if node.all_of or node.any_of or _conservative(node) or node.const is not MISSING:
            return None
        kind = node.types[0]
        parts = [_GUARD[kind].format(v=v), *self.scalar_conds(node, kind, v)]
        if node.enum is not None:
            member = _ENUM_MEMBER[kind]
            if not all(member(x) for x in node.enum):
                return None
            parts.append(f"{v} in {self.const(f'enum{node.index}', frozenset(node.enum))}")
        return "(" + " and ".join(parts) + ")"

    def call(self, node: Node, v: str) -> str:
        return self.inline(node, v) or f"ok{node.index}({v})"

    # ---------------------------------------------------------------------------------------- functions

    def function(self, node: Node) -> str:
        i = node.index
        head = f"def ok{i}(v):"
        if _conservative(node):
            return f"{head}\n    return False\n"
        expr = self.inline(node, "v")
        if expr is not None:
            return f"{head}\n    return {expr}\n"
        body: list[str] = ["t = type(v)"]
        types = node.types
        branches: list[tuple[str, list[str]]] = []
        if types is None or "string" in types:
            branches.append(("t is str", self.checks(self.scalar_conds(node, "string", "v"))))
        if types is None or "integer" in types or "number" in types:
            branches.append(("t is int", self.checks(self.scalar_conds(node, "number", "v"))))
        if types is None or "number" in types:
            conds = ["-_inf < v < _inf", *self.scalar_conds(node, "number", "v")]
            branches.append(("t is float", self.checks(conds)))
        if types is None or "boolean" in types:
            branches.append(("t is bool", ["pass"]))
        if types is None or "null" in types:
            branches.append(("v is None", ["pass"]))
        if _takes_dict(node):
            branches.append(("t is dict", self.object_body(node)))
        if _takes_list(node):
            branches.append(("t is list", self.array_body(node)))
        for n, (test, lines) in enumerate(branches):
            body.append(f"{'if' if n == 0 else 'elif'} {test}:")
            body.extend("    " + line for line in lines)
        body.append("else:" if branches else "if True:")
        body.append("    return False")
        if node.enum is not None:
            body.append(f"if _freeze(v) not in {self.const(f'enumkeys{i}', node.enum_keys)}:")
            body.append("    return False")
        if node.const is not MISSING:
            body.append(f"if _freeze(v) != {self.const(f'const{i}', _freeze(node.const))}:")
            body.append("    return False")
        for sub in node.all_of:
            body.append(f"if not {self.call(sub, 'v')}:")
            body.append("    return False")
        if node.any_of:
            either = " or ".join(self.call(sub, "v") for sub in node.any_of)
            body.append(f"if not ({either}):")
            body.append("    return False")
        body.append("return True")
        return head + "\n" + "".join(f"    {line}\n" for line in body)

    @staticmethod
    def checks(conds: list[str]) -> list[str]:
        if not conds:
            return ["pass"]
        return [f"if not ({' and '.join(conds)}):", "    return False"]

    def object_body(self, node: Node) -> list[str]:
        if node.pattern_properties:
            return ["return False"]
        i = node.index
        props = node.properties
        lines: list[str] = []
        required = [name for name in dict.fromkeys(node.required) if name in props]
        optional = [name for name in props if name not in required]
        for name in required:
            lines += ["try:", f"    x = v[{name!r}]", "except KeyError:", "    return False"]
            lines += [f"if not {self.call(props[name], 'x')}:", "    return False"]
        if optional:
            lines.append("n = 0")
        for name in optional:
            lines += [f"x = v.get({name!r}, _MISS)", "if x is not _MISS:", "    n += 1"]
            lines += [f"    if not {self.call(props[name], 'x')}:", "        return False"]
        for name in node.required:
            if name not in props:
                lines += [f"if {name!r} not in v:", "    return False"]
        count = f"{len(required)} + n" if optional else str(len(required))
        extra = self.call(node.additional, "x") if isinstance(node.additional, Node) else "_plain(x)"
        strict = node.drop_unknown or node.additional is False
        known = self.const(f"known{i}", node.known)
        if node.known == set(props):
            if strict:
                lines += [f"if len(v) != {count}:", "    return False"]
            else:
                lines += [
                    f"if len(v) != {count}:",
                    "    for k, x in v.items():",
                    f"        if k not in {known} and (type(k) is not str or not {extra}):",
                    "            return False",
                ]
        else:
            miss = "True" if strict else f"(type(k) is not str or not {extra})"
            lines += [
                "for k, x in v.items():",
                f"    if k not in {known} and {miss}:",
                "        return False",
            ]
        if node.min_properties is not None:
            lines += [f"if len(v) < {self.const(f'minprops{i}', node.min_properties)}:", "    return False"]
        if node.max_properties is not None:
            lines += [f"if len(v) > {self.const(f'maxprops{i}', node.max_properties)}:", "    return False"]
        return lines

    def array_body(self, node: Node) -> list[str]:
        if node.prefix or node.additional_items is not None:
            return ["return False"]
        i = node.index
        lines = [f"if len(v) > {int(self.limits.max_items)}:", "    return False"]
        if node.min_items is not None:
            lines += [f"if len(v) < {self.const(f'minitems{i}', node.min_items)}:", "    return False"]
        if node.max_items is not None:
            lines += [f"if len(v) > {self.const(f'maxitems{i}', node.max_items)}:", "    return False"]
        if node.unique_items:
            lines += ["if not _unique(v):", "    return False"]
        each = self.call(node.items, "x") if node.items is not None else "_plain(x)"
        lines += ["for x in v:", f"    if not {each}:", "        return False"]
        return lines


def build_fast_checks(nodes: list[Node], limits: Limits) -> None:
    """Generate and attach ``ok`` to every node (one code object for the whole schema)."""
    gen = _Gen(limits)
    source = "\n".join(gen.function(node) for node in nodes)
    exec(compile(source, "<hermes-arguments-fast-check>", "exec"), gen.ns)
    for node in nodes:
        node.ok = gen.ns[f"ok{node.index}"]


def static_depth(node: Node) -> float:
    """The deepest container nesting ``node.ok`` can accept (``inf`` for recursive schemas)."""
    memo: dict[int, float] = {}

    def walk(n: Node, active: frozenset[int]) -> float:
        if n.index in memo:
            return memo[n.index]
        if n.index in active:
            return math.inf
        if _conservative(n):
            return 0
        inner = active | {n.index}
        depth = 0.0
        if _takes_dict(n):
            children = list(n.properties.values())
            if isinstance(n.additional, Node):
                children.append(n.additional)
            depth = max(depth, 1 + max((walk(c, inner) for c in children), default=0))
        if _takes_list(n):
            depth = max(depth, 1 + (walk(n.items, inner) if n.items is not None else 0))
        for sub in (*n.all_of, *n.any_of):
            depth = max(depth, walk(sub, inner))
        memo[n.index] = depth
        return depth

    return walk(node, frozenset())
