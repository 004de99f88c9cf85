"""``AgentResult``: how one ``Agent.run`` ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..models import Usage

if TYPE_CHECKING:
    from ..decisions import CallOutcome

__all__ = ["AgentResult", "StopReason"]

StopReason = Literal["done", "max_turns", "cancelled", "error", "refusal", "length", "content_filter"]


@dataclass(slots=True)
class AgentResult:
    """The end of one ``run``.

    ``stop_reason``: ``done`` (the model answered without asking for tools), ``max_turns`` (the turn budget
    ran out first), ``cancelled``, ``error`` (the model request failed for good), ``refusal`` (the model declined;
    ``text`` is its explanation), ``length`` (the answer was cut off at the output limit; tool calls cut off
    with it are not run) or ``content_filter`` (the provider's filter stopped the answer). For every end but
    ``done`` and ``cancelled``, ``error`` says what happened; the conversation stays valid in all of them.
    ``text`` is the last assistant text; ``messages`` the messages this run added; ``tool_calls`` every call's
    outcome; ``usage`` the tokens of every request of the run, summed.
    """

    text: str
    stop_reason: StopReason
    turns: int
    session_id: str
    model: str
    tool_calls: list[CallOutcome] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.stop_reason == "done"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (the messages themselves are left out)."""
        return {
            "text": self.text,
            "stop_reason": self.stop_reason,
            "turns": self.turns,
            "session_id": self.session_id,
            "model": self.model,
            "error": self.error,
            "usage": self.usage.as_dict(),
            "tool_calls": [
                {
                    "call_id": o.call_id,
                    "name": o.name,
                    "status": o.status,
                    "error_kind": o.error_kind,
                    "duration_ms": round(o.duration_ms, 3),
                }
                for o in self.tool_calls
            ],
        }
