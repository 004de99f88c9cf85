"""Schemas are the single source of truth: argument parsing, coercion, validation and provider formats.

Public names: ``parse_tool_arguments``, ``coerce_tool_args``, ``compile_arguments``, ``ToolArgumentError``,
``render`` and the ``to_*`` provider renderers, ``provider_problems`` and ``schema_problems``, and
``value_problems`` (any value checked against a JSON Schema, nothing coerced).
"""

from __future__ import annotations

from ._args import (
    ArgumentProblem,
    ArgumentsProcessor,
    ToolArgumentError,
    coerce_tool_args,
    compile_arguments,
    parse_tool_arguments,
    value_problems,
)
from ._metaschema import SchemaChecker, schema_problems
from ._providers import FORMATS, provider_problems, render, to_anthropic, to_gemini, to_mcp, to_openai

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
