"""Schemas are the single source of truth: argument parsing, coercion, validation and provider formats.

Public names: ``parse_tool_arguments``, ``coerce_tool_args``, ``compile_arguments``, ``ToolArgumentError``,
``render`` and the ``to_*`` provider renderers, ``provider_problems`` and ``schema_problems``, and
``value_problems`` (any value checked against a JSON Schema, nothing coerced).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._args import (
        ArgumentsProcessor,
        coerce_tool_args,
        compile_arguments,
        parse_tool_arguments,
        value_problems,
    )
    from ._args_errors import ArgumentProblem, ToolArgumentError
    from ._metaschema import SchemaChecker, schema_problems
    from ._providers import FORMATS, provider_problems, render, to_anthropic, to_gemini, to_mcp, to_openai

# each public name -> its module, imported on first use: a process that only lists tools (definitions) never
# loads the argument compiler, and one that never lists them never loads the provider renderers
_HOME = {
    "ArgumentsProcessor": "_args",
    "coerce_tool_args": "_args",
    "compile_arguments": "_args",
    "parse_tool_arguments": "_args",
    "value_problems": "_args",
    "ArgumentProblem": "_args_errors",
    "ToolArgumentError": "_args_errors",
    "SchemaChecker": "_metaschema",
    "schema_problems": "_metaschema",
    "FORMATS": "_providers",
    "provider_problems": "_providers",
    "render": "_providers",
    "to_anthropic": "_providers",
    "to_gemini": "_providers",
    "to_mcp": "_providers",
    "to_openai": "_providers",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "FORMATS",
    "ArgumentProblem",
    "ArgumentsProcessor",
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
    "value_problems",
]
