"""The kanban board's words (statuses, link kinds, the default lease) and refusals: what the kanban tools need
to describe themselves, apart from ``_board`` and the SQL layer it loads, which only a call needs."""

from __future__ import annotations

__all__ = [
    "CLOSED",
    "DEFAULT_LEASE",
    "LINK_KINDS",
    "MAX_ATTACHMENT",
    "OPEN",
    "STATUSES",
    "BoardError",
    "ClaimLost",
]

STATUSES = ("todo", "in_progress", "blocked", "review", "done", "cancelled")
OPEN = ("todo", "in_progress", "blocked", "review")
CLOSED = ("done", "cancelled")
LINK_KINDS = ("depends_on", "relates_to", "duplicates")
DEFAULT_LEASE = 600.0
MAX_ATTACHMENT = 1_000_000


class BoardError(ValueError):
    """A request the board refuses; the message says why and what to do."""


class ClaimLost(BoardError):
    """The caller's claim is gone: its lease ran out and another worker claimed the task (or it was released)."""
