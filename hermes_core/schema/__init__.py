"""Schemas are the single source of truth: argument parsing, coercion, validation and provider formats.

Public names: ``parse_tool_arguments``, ``coerce_tool_args``, ``compile_arguments``, ``ToolArgumentError``,
``render`` and the ``to_*`` provider renderers, ``provider_problems`` and ``schema_problems``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._metaschema import SchemaChecker, schema_problems
from ._providers import FORMATS, provider_problems, render, to_anthropic, to_gemini, to_mcp, to_openai

if TYPE_CHECKING:
    from ._args import ToolArgumentError, coerce_tool_args, compile_arguments, parse_tool_arguments

__all__ = [
    "FORMATS",
    "SchemaChecker",
    "ToolArgumentError",
    "coerce_tool_args",
    "compile_arguments",
    "parse_tool_arguments",
    "provider_problems",
    "render",
    "schema_problems",
    "to_anthropic",
    "to_gemini",
    "to_mcp",
    "to_openai",
]

_ARGS = frozenset({"ToolArgumentError", "coerce_tool_args", "compile_arguments", "parse_tool_arguments"})


def __getattr__(name: str) -> Any:
    if name in _ARGS:
        from . import _args

        return getattr(_args, name)
    raise AttributeError(f"module 'hermes_core.schema' has no attribute {name!r}")
