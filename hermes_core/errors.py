"""What handlers use to talk back to the model: ``ToolError``, ``tool_result`` and ``tool_error``.

A leaf module: nothing of ours is imported here, so handlers and the registry can use it freely.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ToolError", "tool_error", "tool_result"]


class ToolError(Exception):
    """A deliberate, model-facing failure: its message reaches the model unchanged (after redaction).

    Any other exception raised by a handler is replaced by a short generic message with an error id.
    ``kind`` is reported to ``post_tool_call`` hooks; ``retryable`` tells the model whether trying
    again with other arguments may help.
    """

    def __init__(self, message: str, *, kind: str = "tool_error", retryable: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.retryable = retryable


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def tool_result(value: Any = None, /, **fields: Any) -> str:
    """Render a handler's result as the string the model sees.

    A string is returned unchanged; anything else (or the keyword fields) becomes compact JSON.
    """
    if fields:
        if value is not None:
            fields = {"result": value, **fields}
        return _dumps(fields)
    if isinstance(value, str):
        return value
    return _dumps(value)


def tool_error(message: str, /, **details: Any) -> str:
    """Render a failure as ``{"error": message, ...details}`` for a handler that returns instead of raising."""
    return _dumps({"error": message, **details})
