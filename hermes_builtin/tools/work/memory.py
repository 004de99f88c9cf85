"""``memory``: notes that persist across sessions, in ``<data dir>/memory/<target>.json``, size-capped."""

from __future__ import annotations

import time
from typing import Any

from hermes_core import CallContext, ToolError, ToolRegistry

from ._state import read_json, update_json

TOOLSET = "memory"
TARGETS = ("notes", "user")
MAX_TOTAL_CHARS = 20_000
MAX_ENTRY_CHARS = 4_000

SCHEMA: dict[str, Any] = {
    "name": "memory",
    "description": (
        "Long-term memory that survives across sessions. Save durable facts worth knowing next time "
        "(conventions, decisions, lessons), not task progress. target 'user' holds facts about the user "
        "(preferences, role); 'notes' (default) everything else. Actions: read, add (content), "
        "replace (old_text -> content), remove (old_text). old_text is a unique part of the entry. Total size is "
        "capped; remove or condense old entries when full."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["read", "add", "replace", "remove"]},
            "target": {"type": "string", "enum": list(TARGETS), "description": "Default notes."},
            "content": {"type": "string", "minLength": 1, "maxLength": MAX_ENTRY_CHARS},
            "old_text": {"type": "string", "minLength": 1},
            "id": {"type": "integer", "description": "Instead of old_text: the id shown by read."},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}


def _valid(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list):
        return {"next_id": 1, "entries": []}
    entries = [
        e
        for e in raw["entries"]
        if isinstance(e, dict) and isinstance(e.get("id"), int) and isinstance(e.get("content"), str)
    ]
    top = max((e["id"] for e in entries), default=0)
    next_id = raw.get("next_id")
    return {"next_id": next_id if isinstance(next_id, int) and next_id > top else top + 1, "entries": entries}


def _used(entries: list[dict[str, Any]]) -> int:
    return sum(len(e["content"]) for e in entries)


def _render(target: str, entries: list[dict[str, Any]]) -> str:
    head = f"Memory '{target}' ({len(entries)} entries, {_used(entries)}/{MAX_TOTAL_CHARS} chars)"
    if not entries:
        return head + ": empty."
    return head + ":\n" + "\n".join(f"[{e['id']}] {e['content']}" for e in entries)


def _clean(content: str | None) -> str:
    text = (content or "").strip()
    if not text:
        raise ToolError("this action needs non-empty 'content'")
    if len(text) > MAX_ENTRY_CHARS:
        raise ToolError(f"an entry holds at most {MAX_ENTRY_CHARS} chars; this one has {len(text)}")
    return text


def memory(
    action: str,
    target: str = "notes",
    content: str | None = None,
    old_text: str | None = None,
    id: int | None = None,
    *,
    context: CallContext,
) -> str:
    """Read, add, replace or remove memory entries of one target."""
    if target not in TARGETS:
        raise ToolError(f"unknown target {target!r}; use one of {', '.join(TARGETS)}")
    path = context.data_dir / TOOLSET / f"{target}.json"
    if action == "read":
        return _render(target, _valid(read_json(path, None))["entries"])
    if action not in ("add", "replace", "remove"):
        raise ToolError(f"unknown action {action!r}; use read, add, replace or remove")
    with update_json(path, None) as box:
        state = _valid(box[0])
        box[0] = state
        entries: list[dict[str, Any]] = state["entries"]
        now = round(time.time(), 3)
        if action == "add":
            text = _clean(content)
            if any(e["content"] == text for e in entries):
                return f"Already in memory '{target}'; nothing added."
            new_id = state["next_id"]
            _check_size(entries, len(text))
            entries.append({"id": new_id, "content": text, "created": now, "updated": now})
            state["next_id"] = new_id + 1
            note = f"Added entry {new_id}"
        else:
            match = _find(entries, target, action, old_text, id)
            if action == "replace":
                text = _clean(content)
                _check_size(entries, len(text) - len(match["content"]))
                match["content"] = text
                match["updated"] = now
                note = f"Replaced entry {match['id']}"
            else:
                entries.remove(match)
                note = f"Removed entry {match['id']}"
        return f"{note}. Memory '{target}' now uses {_used(entries)}/{MAX_TOTAL_CHARS} chars."


def _preview(entry: dict[str, Any]) -> str:
    text = " ".join(entry["content"].split())
    return f"[{entry['id']}] {text[:80]}{'…' if len(text) > 80 else ''}"


def _find(
    entries: list[dict[str, Any]], target: str, action: str, old_text: str | None, entry_id: int | None
) -> dict[str, Any]:
    """The one entry ``old_text`` (a unique part of it, spaces normalised) or ``entry_id`` names."""
    if entry_id is not None:
        match = next((e for e in entries if e["id"] == entry_id), None)
        if match is None:
            known = ", ".join(str(e["id"]) for e in entries) or "none"
            raise ToolError(f"no entry {entry_id} in memory '{target}' (ids: {known})")
        return match
    wanted = " ".join((old_text or "").split())
    if not wanted:
        raise ToolError(
            f"{action} needs 'old_text': a part of the entry to {action}, unique in memory '{target}'"
        )
    found = [e for e in entries if wanted in " ".join(e["content"].split())]
    exact = [e for e in found if " ".join(e["content"].split()) == wanted]
    if len(found) == 1 or len(exact) == 1:
        return (exact or found)[0]
    if not found:
        raise ToolError(f"no entry of memory '{target}' contains {wanted[:80]!r}; read shows what is there")
    candidates = "; ".join(_preview(e) for e in found[:10])
    raise ToolError(
        f"{wanted[:80]!r} matches {len(found)} entries of memory '{target}', so nothing was changed; give a longer "
        f"part of the one you mean. Candidates: {candidates}"
    )


def _check_size(entries: list[dict[str, Any]], growth: int) -> None:
    used = _used(entries)
    if used + growth > MAX_TOTAL_CHARS:
        raise ToolError(
            f"memory is full: {used}/{MAX_TOTAL_CHARS} chars used and this needs {growth} more; "
            "remove or condense entries first (read shows them with ids)"
        )


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="memory",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=memory,
        emoji="🧠",
        max_result_size_chars=MAX_TOTAL_CHARS + 5_000,
    )
