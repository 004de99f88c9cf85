"""Render one registered tool schema for each provider: OpenAI, Anthropic, Gemini and MCP.

The registered schema (``{"name", "description", "parameters"}``) is the single source; each renderer
derives its provider's shape from it and applies that provider's restrictions on schemas.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["FORMATS", "provider_problems", "render", "to_anthropic", "to_gemini", "to_mcp", "to_openai"]

_EMPTY_PARAMS: dict[str, Any] = {"type": "object", "properties": {}}

_NAME_RULES = {
    "openai": re.compile(r"^[A-Za-z0-9_-]{1,64}$"),
    "anthropic": re.compile(r"^[A-Za-z0-9_-]{1,64}$"),
    "gemini": re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$"),
    "mcp": re.compile(r"^[A-Za-z0-9_.-]{1,128}$"),
}


def _params(schema: Mapping[str, Any]) -> dict[str, Any]:
    params = schema.get("parameters")
    return params if isinstance(params, dict) else _EMPTY_PARAMS


def _description(schema: Mapping[str, Any]) -> str:
    return str(schema.get("description", ""))


def to_openai(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``{"type": "function", "function": {name, description, parameters}}`` (Chat Completions tools)."""
    params = _params(schema)
    if "properties" not in params:
        params = {**params, "properties": {}}
    return {
        "type": "function",
        "function": {"name": schema["name"], "description": _description(schema), "parameters": params},
    }


def to_anthropic(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``{name, description, input_schema}`` (Messages API tools)."""
    return {"name": schema["name"], "description": _description(schema), "input_schema": _params(schema)}


def to_mcp(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``{name, description, inputSchema}`` (MCP ``tools/list``)."""
    return {"name": schema["name"], "description": _description(schema), "inputSchema": _params(schema)}


# Gemini function declarations take an OpenAPI 3.0 subset of JSON Schema.
_GEMINI_KEYS = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "properties",
        "required",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "anyOf",
        "title",
        "minLength",
        "maxLength",
        "pattern",
        "minProperties",
        "maxProperties",
        "propertyOrdering",
    }
)
_GEMINI_FORMATS = {
    "string": {"enum", "date-time"},
    "integer": {"int32", "int64"},
    "number": {"float", "double"},
}
_MAX_DEPTH = 32


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _gemini_node(node: Any, root: Mapping[str, Any], seen: tuple[str, ...], depth: int) -> dict[str, Any]:
    if not isinstance(node, Mapping) or depth > _MAX_DEPTH:
        return {"type": "STRING"} if depth > _MAX_DEPTH else {}
    if "$ref" in node:
        ref = node["$ref"]
        target = _resolve_ref(ref, root) if isinstance(ref, str) else None
        if target is None or ref in seen:  # unknown or recursive: Gemini cannot express it
            return {"type": "OBJECT", "description": str(node.get("description", "recursive value"))}
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _gemini_node(merged, root, (*seen, ref), depth + 1)
    out: dict[str, Any] = {}
    raw_type = node.get("type")
    types = list(raw_type) if isinstance(raw_type, list) else ([raw_type] if raw_type else [])
    if "null" in types:
        out["nullable"] = True
        types = [t for t in types if t != "null"]
    if len(types) > 1:
        out["anyOf"] = [{"type": t.upper()} for t in types if isinstance(t, str)]
    elif types and isinstance(types[0], str):
        out["type"] = types[0].upper()
    if "const" in node:
        out["enum"] = [node["const"]]
        out.setdefault("type", "STRING")
    for key, value in node.items():
        if key not in _GEMINI_KEYS or key == "type":
            continue
        if key == "properties" and isinstance(value, Mapping):
            out["properties"] = {k: _gemini_node(v, root, seen, depth + 1) for k, v in value.items()}
        elif key == "items":
            out["items"] = _gemini_node(value, root, seen, depth + 1)
        elif key == "anyOf" and isinstance(value, list):
            branches = [b for b in value if not (isinstance(b, Mapping) and b.get("type") == "null")]
            if len(branches) < len(value):
                out["nullable"] = True
            if len(branches) == 1:
                out.update(_gemini_node(branches[0], root, seen, depth + 1))
            else:
                out["anyOf"] = [_gemini_node(b, root, seen, depth + 1) for b in branches]
        elif key == "format":
            allowed = _GEMINI_FORMATS.get(str(raw_type), set())
            if value in allowed:
                out["format"] = value
        elif key == "enum" and isinstance(value, list):
            out["enum"] = [str(v) for v in value]  # Gemini enums are strings
            out.setdefault("type", "STRING")
        else:
            out[key] = copy.deepcopy(value)
    if "oneOf" in node and "anyOf" not in out and isinstance(node["oneOf"], list):
        out["anyOf"] = [_gemini_node(b, root, seen, depth + 1) for b in node["oneOf"]]
    if out.get("type") == "OBJECT" and "properties" in out and not out["properties"]:
        del out["properties"]
    if "required" in out and "properties" in out:
        out["required"] = [r for r in out["required"] if r in out["properties"]]
    return out


def to_gemini(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A Gemini ``FunctionDeclaration``: the OpenAPI subset, refs inlined, no ``additionalProperties``."""
    params = _params(schema)
    decl: dict[str, Any] = {"name": schema["name"], "description": _description(schema)}
    if params.get("properties"):
        decl["parameters"] = _gemini_node(params, params, (), 0)
    return decl


FORMATS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "openai": to_openai,
    "anthropic": to_anthropic,
    "gemini": to_gemini,
    "mcp": to_mcp,
}


def render(schema: Mapping[str, Any], fmt: str = "openai") -> dict[str, Any]:
    """Render a registered tool schema in ``fmt`` (openai, anthropic, gemini or mcp)."""
    try:
        return FORMATS[fmt](schema)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}") from None


def provider_problems(schema: Mapping[str, Any]) -> dict[str, list[str]]:
    """What each provider would refuse about this schema (empty lists when all accept it)."""
    name = str(schema.get("name", ""))
    params = _params(schema)
    out: dict[str, list[str]] = {}
    for fmt, rule in _NAME_RULES.items():
        problems = []
        if not rule.match(name):
            problems.append(f"tool name {name!r} does not match {rule.pattern}")
        if params.get("type", "object") != "object":
            problems.append("parameters must be a JSON Schema of type 'object'")
        if fmt in ("openai", "anthropic") and any(k in params for k in ("anyOf", "oneOf", "allOf", "not")):
            problems.append("anyOf/oneOf/allOf/not are not allowed at the top level of parameters")
        if fmt == "openai" and len(_description(schema)) > 1024:
            problems.append("description longer than 1024 characters")
        out[fmt] = problems
    return out
