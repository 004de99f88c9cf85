"""What a ``pre_tool_call`` hook may return, and what every call ends as (``CallOutcome``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Block", "CallOutcome", "RequireApproval", "Rewrite", "Status"]

Status = Literal["ok", "error", "blocked", "denied"]


@dataclass(frozen=True, slots=True)
class Block:
    """Refuse the call; ``reason`` is told to the model."""

    reason: str


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Run the call with these arguments instead (they are validated again)."""

    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RequireApproval:
    """Ask the human before running the call; without an approval it is denied."""

    reason: str
    subject: str | None = None  # what the approval binds to; defaults to the tool name and its arguments


@dataclass(slots=True)
class CallOutcome:
    """The full story of one call, for hosts that want more than the result string.

    ``status`` is ok / error / blocked / denied. ``error_kind`` says which error: ``unknown_tool``,
    ``invalid_arguments``, ``timeout``, ``tool_error`` (a deliberate ``ToolError``), ``exception`` (a bug in
    the handler, with ``error_id`` naming the logged traceback), ``hook_error`` or ``approval``.
    """

    name: str
    status: Status
    result: str
    call_id: str = ""
    duration_ms: float = 0.0
    error_kind: str | None = None
    error_id: str | None = None
    truncated: bool = False
    full_output_path: str | None = None
    arguments: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"
