"""What an agent reports while it works, to the host's ``on_event`` callback.

Every event carries the ``session_id`` and ``depth`` (0 for the agent the host made, 1 for its sub-agents...)
of the agent it comes from. Sub-agents run on worker threads, so a callback may be called from several
threads at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..decisions import CallOutcome
    from ._result import AgentResult

__all__ = [
    "AgentEvent",
    "AgentFinished",
    "ContextTrimmed",
    "ModelRetrying",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "TurnStarted",
]


@dataclass(frozen=True, slots=True)
class AgentEvent:
    session_id: str
    depth: int


@dataclass(frozen=True, slots=True)
class TurnStarted(AgentEvent):
    """A model request is about to go out (``turn`` counts from 1 within one ``run``)."""

    turn: int


@dataclass(frozen=True, slots=True)
class TextDelta(AgentEvent):
    """A piece of the assistant's text, as it streams in."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted(AgentEvent):
    """The model asked for a tool call; ``arguments`` is its JSON text as written."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolCallFinished(AgentEvent):
    """A tool call ended; ``outcome.result`` is what the model will see."""

    call_id: str
    outcome: CallOutcome


@dataclass(frozen=True, slots=True)
class ModelRetrying(AgentEvent):
    """A model request failed in a way worth retrying; the next attempt starts after ``delay`` seconds."""

    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True, slots=True)
class ContextTrimmed(AgentEvent):
    """Old messages were trimmed to fit the context budget."""

    chars_removed: int
    messages_dropped: int
    results_cut: int


@dataclass(frozen=True, slots=True)
class AgentFinished(AgentEvent):
    """``run`` is returning this result."""

    result: AgentResult


def describe(event: AgentEvent) -> dict[str, Any]:
    """An event as a plain dict (for logs and JSON output)."""
    out: dict[str, Any] = {"event": type(event).__name__}
    for name in type(event).__dataclass_fields__:
        value = getattr(event, name)
        if name == "outcome":
            value = {"name": value.name, "status": value.status, "duration_ms": round(value.duration_ms, 3)}
        elif name == "result":
            value = value.stop_reason
        out[name] = value
    return out
