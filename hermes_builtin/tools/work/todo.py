"""``todo``: the task list of the current session, kept in ``<data dir>/todo/<session>.json``."""

from __future__ import annotations

from typing import Any

from hermes_core import CallContext, ToolError, ToolRegistry

from ._state import read_json, safe_key, update_json

TOOLSET = "todo"
STATUSES = ("pending", "in_progress", "completed", "cancelled")
MAX_ITEMS = 100
MAX_CONTENT = 500
_MARK = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "cancelled": "[-]"}

SCHEMA: dict[str, Any] = {
    "name": "todo",
    "description": "Your task list for multi-step work. write: todos (merge: change/add by id).",
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "update", "write", "list", "clear"]},
            "items": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT},
                "maxItems": MAX_ITEMS,
            },
            "id": {"type": "integer"},
            "status": {"type": "string", "enum": list(STATUSES)},
            "content": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT},
            "done_only": {"type": "boolean"},
            "todos": {
                "type": "array",
                "maxItems": MAX_ITEMS,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer"},
                        "content": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    },
                    "additionalProperties": False,
                },
            },
            "merge": {"type": "boolean"},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}


def _render(state: dict[str, Any]) -> str:
    items = state["items"]
    if not items:
        return "Todo list is empty."
    done = sum(1 for it in items if it["status"] == "completed")
    lines = [f"Todo ({len(items)} tasks, {done} completed):"]
    lines += [f"{_MARK[it['status']]} {it['id']}. {it['content']}" for it in items]
    return "\n".join(lines)


def _clean(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise ToolError("a task needs some text")
    return text[:MAX_CONTENT]


def todo(
    action: str,
    items: list[str] | None = None,
    id: int | None = None,
    status: str | None = None,
    content: str | None = None,
    done_only: bool = False,
    todos: list[dict[str, Any]] | None = None,
    merge: bool = False,
    *,
    context: CallContext,
) -> str:
    """Add, update, write, list or clear the tasks of the calling session."""
    path = context.data_dir / TOOLSET / f"{safe_key(context.session_id)}.json"
    if action == "list":
        return _render(_valid(read_json(path, None)))
    with update_json(path, None) as box:
        state = _valid(box[0])
        box[0] = state
        entries: list[dict[str, Any]] = state["items"]
        if action == "add":
            if not items:
                raise ToolError("add needs 'items': a list of task texts")
            new = [_clean(text) for text in items]
            if len(entries) + len(new) > MAX_ITEMS:
                raise ToolError(
                    f"the list would have more than {MAX_ITEMS} tasks; clear finished ones first (done_only)"
                )
            for text in new:
                entries.append({"id": state["next_id"], "content": text, "status": "pending"})
                state["next_id"] += 1
        elif action == "update":
            if id is None:
                raise ToolError("update needs 'id'")
            if status is None and content is None:
                raise ToolError("update needs 'status' or 'content'")
            match = next((it for it in entries if it["id"] == id), None)
            if match is None:
                known = ", ".join(str(it["id"]) for it in entries) or "none"
                raise ToolError(f"no task with id {id} (ids: {known})")
            if status is not None:
                match["status"] = status
            if content is not None:
                match["content"] = _clean(content)
        elif action == "write":
            if todos is None:
                raise ToolError(
                    "write needs 'todos': the whole list (or, with merge, the items to change or add)"
                )
            state["items"] = _merged(state, todos) if merge else _replaced(state, todos)
        elif action == "clear":
            if done_only:
                state["items"] = [it for it in entries if it["status"] in ("pending", "in_progress")]
            else:
                state["items"] = []
        else:
            raise ToolError(f"unknown action {action!r}; use add, update, write, list or clear")
        return _render(state)


def _new_item(state: dict[str, Any], given: dict[str, Any], taken: set[int]) -> dict[str, Any]:
    if "content" not in given:
        raise ToolError(f"a new task needs 'content' (got {given!r})")
    wanted = given.get("id")
    item_id = int(state["next_id"])
    if isinstance(wanted, int) and wanted > 0 and wanted not in taken:
        item_id = wanted
    state["next_id"] = max(state["next_id"], item_id + 1)
    taken.add(item_id)
    return {"id": item_id, "content": _clean(given["content"]), "status": given.get("status", "pending")}


def _replaced(state: dict[str, Any], todos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The list becomes ``todos``: ids given are kept when unique, the others are numbered on."""
    taken: set[int] = set()
    return [_new_item(state, given, taken) for given in todos]


def _merged(state: dict[str, Any], todos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items whose id exists are changed (content and/or status); the others are added at the end."""
    items: list[dict[str, Any]] = [dict(it) for it in state["items"]]
    by_id = {it["id"]: it for it in items}
    taken = set(by_id)
    for given in todos:
        current = by_id.get(given.get("id", -1))
        if current is None:
            items.append(_new_item(state, given, taken))
            continue
        if "content" in given:
            current["content"] = _clean(given["content"])
        if "status" in given:
            current["status"] = given["status"]
    if len(items) > MAX_ITEMS:
        raise ToolError(
            f"the list would have more than {MAX_ITEMS} tasks; clear finished ones first (done_only)"
        )
    return items


def _valid(raw: Any) -> dict[str, Any]:
    """The stored state, or a fresh one; entries of an unexpected shape are dropped rather than crashing."""
    if not isinstance(raw, dict) or not isinstance(raw.get("items"), list):
        return {"next_id": 1, "items": []}
    items = [
        it
        for it in raw["items"]
        if isinstance(it, dict)
        and isinstance(it.get("id"), int)
        and isinstance(it.get("content"), str)
        and it.get("status") in STATUSES
    ]
    next_id = raw.get("next_id")
    top = max((it["id"] for it in items), default=0)
    return {"next_id": next_id if isinstance(next_id, int) and next_id > top else top + 1, "items": items}


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="todo",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=todo,
        emoji="📋",
        max_result_size_chars=60_000,
    )
