"""How a tool's handler takes its arguments, read once from its signature, and where it disagrees with its schema.

Two styles are supported:

- ``"kwargs"`` (the default): ``handler(**arguments)``, plus ``context=`` when it declares a ``context``
  parameter;
- ``"dict"``: the reference system's ``handler(args: dict, **kw)``; the validated arguments are passed as one
  dict, and ``context=`` too when the handler declares ``context`` or takes ``**kw``.

A tool declares its style with ``registry.register(..., handler_style="dict")``; undeclared, a handler whose
only required parameter is named ``args``/``arguments``/``params`` (or annotated ``dict``) and is not a
property of its schema is taken to be dict style.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["STYLES", "HandlerShape", "handler_shape", "signature_problems"]

STYLES = ("kwargs", "dict")
_DICT_NAMES = frozenset({"args", "arguments", "params"})
_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


class HandlerShape:
    """``style`` ("kwargs" or "dict") and whether the handler receives the call context."""

    __slots__ = ("style", "wants_context")

    def __init__(self, style: str, wants_context: bool) -> None:
        self.style = style
        self.wants_context = wants_context

    def __repr__(self) -> str:
        return f"HandlerShape(style={self.style!r}, wants_context={self.wants_context})"


def _signature(handler: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(handler)
    except (TypeError, ValueError):  # some builtins and C callables have none
        return None


def _properties(parameters: Mapping[str, Any]) -> Mapping[str, Any]:
    props = parameters.get("properties") if isinstance(parameters, Mapping) else None
    return props if isinstance(props, Mapping) else {}


def _dictish(annotation: Any) -> bool:
    if annotation is dict or getattr(annotation, "__origin__", None) is dict:
        return True
    return isinstance(annotation, str) and annotation.replace(" ", "").startswith(("dict", "Dict", "Mapping"))


def _looks_like_dict_style(sig: inspect.Signature, properties: Mapping[str, Any]) -> bool:
    params = [p for p in sig.parameters.values() if p.name != "context"]
    required = [
        p
        for p in params
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if len(required) != 1 or params[0] is not required[0]:
        return False
    first = required[0]
    return first.name not in properties and (first.name in _DICT_NAMES or _dictish(first.annotation))


def handler_shape(
    handler: Callable[..., Any], parameters: Mapping[str, Any], declared: str | None = None
) -> HandlerShape:
    """The style and context opt-in of ``handler`` (``declared`` wins over detection)."""
    sig = _signature(handler)
    if sig is None:
        return HandlerShape(declared or "kwargs", False)
    style = declared or ("dict" if _looks_like_dict_style(sig, _properties(parameters)) else "kwargs")
    params = sig.parameters
    wants = "context" in params and params["context"].kind is not inspect.Parameter.POSITIONAL_ONLY
    if style == "dict" and not wants:
        wants = any(p.kind is p.VAR_KEYWORD for p in params.values())
    return HandlerShape(style, wants)


def signature_problems(
    handler: Callable[..., Any], parameters: Mapping[str, Any], declared: str | None = None
) -> list[str]:
    """Where calling ``handler`` as the pipeline will disagrees with the schema; empty when they agree."""
    if declared is not None and declared not in STYLES:
        return [f"handler_style must be one of {', '.join(STYLES)}, not {declared!r}"]
    sig = _signature(handler)
    if sig is None:
        return []
    props = _properties(parameters)
    required = parameters.get("required") if isinstance(parameters, Mapping) else None
    required_names = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    shape = handler_shape(handler, parameters, declared)
    params = sig.parameters
    out: list[str] = []
    if "context" in props:
        out.append(
            "the schema has a property named 'context', which is the name of the call context parameter"
        )
    if shape.style == "dict":
        first = next(iter(params.values()), None)
        if first is None or first.kind not in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD):
            return [
                *out,
                "a dict-style handler must take the arguments dict as its first positional parameter",
            ]
        for p in list(params.values())[1:]:
            if p.default is p.empty and p.kind in _NAMED and p.name != "context":
                out.append(
                    f"parameter {p.name!r} has no default, but a dict-style handler only gets the dict"
                )
        return out
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for p in params.values():
        if p.kind is p.POSITIONAL_ONLY and p.default is p.empty:
            out.append(f"parameter {p.name!r} is positional-only; arguments are passed by keyword")
        if p.kind not in _NAMED or p.name == "context" or p.default is not p.empty:
            continue
        if p.name not in props:
            out.append(f"parameter {p.name!r} has no default and is not in the schema, so every call fails")
        elif p.name not in required_names:
            out.append(
                f"parameter {p.name!r} has no default but the schema does not require it; "
                "a call without it fails (give it a default or add it to 'required')"
            )
    if not takes_any:
        accepted = {p.name for p in params.values() if p.kind in _NAMED}
        for name in props:
            if name not in accepted and name != "context":
                kind = "required property" if name in required_names else "property"
                out.append(
                    f"schema {kind} {name!r} is not a parameter of the handler; a call passing it fails"
                )
    return out
