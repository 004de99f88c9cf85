"""What one audit record says about a call, and what it never says (arguments, results, error texts)."""

from __future__ import annotations

from typing import Any

from hermes_core import CallOutcome

from .chain import canonical

__all__ = ["args_sha256", "build_fields", "decision_of"]

# error kinds for calls that never reached a pre_tool_call hook or the handler
_REJECTED = frozenset({"unknown_tool", "invalid_arguments", "unavailable", "not_enabled", "hidden"})


def args_sha256(arguments: Any) -> str | None:
    """The SHA-256 of the arguments' canonical JSON (the arguments themselves are never stored)."""
    if arguments is None:
        return None
    import hashlib

    return hashlib.sha256(canonical(arguments).encode("utf-8")).hexdigest()


def decision_of(outcome: CallOutcome) -> str:
    """``allowed`` (the tool ran), ``blocked``, ``denied``, or ``rejected`` (unknown tool, bad arguments)."""
    if outcome.status in ("blocked", "denied"):
        return outcome.status
    if outcome.status == "error" and outcome.error_kind in _REJECTED:
        return "rejected"
    return "allowed"


def build_fields(
    name: str, arguments: Any, entry: Any, session_id: str | None, outcome: CallOutcome
) -> dict[str, Any]:
    """The record fields of one finished call (``seq`` and the hashes are added by the writer)."""
    from datetime import UTC, datetime

    decision = decision_of(outcome)
    return {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "call_id": outcome.call_id or None,
        "session": session_id,
        "tool": name,
        "toolset": getattr(entry, "toolset", None),
        "plugin": getattr(entry, "plugin", None),
        # a rejected call's arguments were never parsed: there is nothing meaningful to hash
        "args_sha256": None if decision == "rejected" else args_sha256(arguments),
        "decision": decision,
        "status": outcome.status,
        "error_kind": outcome.error_kind,
        "duration_ms": round(float(outcome.duration_ms), 3),
        "result_chars": len(outcome.result) if isinstance(outcome.result, str) else None,
    }
