"""What a ``pre_tool_call`` hook may return, what a check may return (``Unavailable``), and what every call ends
as (``CallOutcome``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "Attachment",
    "Block",
    "CallOutcome",
    "RequireApproval",
    "Rewrite",
    "Status",
    "ToolOutput",
    "Unavailable",
]

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


@dataclass(frozen=True, slots=True)
class Attachment:
    """Binary content a tool returned next to its text: an image, audio or a file (``data`` is the raw bytes).

    Hosts find them on ``CallOutcome.attachments``; ``hermes_core.content.content_blocks`` turns an outcome into
    provider content parts (images for providers that accept them).
    """

    mime_type: str
    data: bytes
    kind: Literal["image", "audio", "binary"] = "binary"
    name: str | None = None  # a file name or URI, when the source gave one


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a handler returns to hand back attachments with its text; ``text`` is what the model reads."""

    text: str
    attachments: tuple[Attachment, ...] = ()


class CallOutcome:
    """The full story of one call, for hosts that want more than the result string.

    ``status`` is ok / error / blocked / denied. ``error_kind`` says which error: ``unknown_tool``,
    ``invalid_arguments``, ``timeout``, ``tool_error`` (a deliberate ``ToolError``), ``exception`` (a bug in
    the handler, with ``error_id`` naming the logged traceback), ``hook_error`` or ``approval``.
    ``attachments`` holds the images and files a handler returned with a ``ToolOutput`` (empty otherwise).
    """

    __slots__ = (
        "attachments",
        "call_id",
        "duration_ms",
        "error_id",
        "error_kind",
        "full_output_path",
        "name",
        "result",
        "status",
        "truncated",
    )

    # A plain class rather than a dataclass: one is built per call, and this constructor is the cheapest.
    def __init__(
        self,
        name: str,
        status: Status,
        result: str,
        call_id: str = "",
        duration_ms: float = 0.0,
        error_kind: str | None = None,
        error_id: str | None = None,
        truncated: bool = False,
        full_output_path: str | None = None,
        attachments: tuple[Attachment, ...] = (),
    ) -> None:
        self.name = name
        self.status = status
        self.result = result
        self.call_id = call_id
        self.duration_ms = duration_ms
        self.error_kind = error_kind
        self.error_id = error_id
        self.truncated = truncated
        self.full_output_path = full_output_path
        self.attachments = attachments

    def __repr__(self) -> str:
        extra = f", error_kind={self.error_kind!r}" if self.error_kind else ""
        return (
            f"CallOutcome(name={self.name!r}, status={self.status!r}{extra}, call_id={self.call_id!r}, "
            f"duration_ms={self.duration_ms:.3f}, result={self.result[:80]!r})"
        )

    def as_dict(self) -> dict[str, Any]:
        return {slot: getattr(self, slot) for slot in self.__slots__}

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Unavailable:
    """What a check returns to hide its tool with a reason; ``by_design`` marks a tool that is meant to be hidden
    in this setting (the host did not provide what it needs), which ``hermes plugins doctor`` does not report
    as a problem; ``fix`` is the one-line remedy the doctor shows (a generic one when empty)."""

    __slots__ = ("by_design", "fix", "reason")

    def __init__(self, reason: str, *, by_design: bool = False, fix: str = "") -> None:
        self.reason = reason
        self.by_design = by_design
        self.fix = fix

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Unavailable({self.reason!r}, by_design={self.by_design}, fix={self.fix!r})"
