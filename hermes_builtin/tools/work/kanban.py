"""The kanban tools: a task board shared by many agents and processes (``_board.Board``).

``kanban_create``, ``kanban_list``, ``kanban_show``, ``kanban_update`` manage tasks; workers ``kanban_claim`` a
ready task (a lease, ``[plugins.kanban] lease`` seconds, default 600), keep it with ``kanban_heartbeat``, and end
it with ``kanban_complete`` or ``kanban_block`` (``kanban_unblock`` puts it back); ``kanban_comment``,
``kanban_attach`` (a file of the workspace, at most 1 MB) and ``kanban_link`` add to it. A worker is named by its
session id unless it names itself with ``agent``.

The fencing token of a claim is kept in the claiming session (``context.session``), so a worker's later writes
carry it without the model handling it: once a lapsed claim is taken over, the first worker's writes are refused.
``hermes kanban dispatch`` (``hermes_builtin.kanban.Dispatcher``) hands ready tasks to sub-agents.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry

from ._board_terms import DEFAULT_LEASE, LINK_KINDS, STATUSES, BoardError

TOOLSET = "kanban"
MAX_TITLE = 200
MAX_TEXT = 4_000
MAX_LIST = 200
CLAIMS_KEY = "kanban.claims"  # session stash: {(board url, task id): fence}

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._board import Board

_AGENT = {"type": "string", "maxLength": 64, "description": "Your worker name (default: your session id)."}
_TASK = {"type": "integer", "minimum": 1}
_IDS = {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 20}


def _schema(
    name: str, description: str, props: dict[str, Any], required: tuple[str, ...] = ("task_id",)
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {**props, "agent": _AGENT},
            "required": list(required),
            "additionalProperties": False,
        },
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    "kanban_create": _schema(
        "kanban_create",
        "Add a task to the shared kanban board (every agent sees it). depends_on: ids that must be done first.",
        {
            "title": {"type": "string", "minLength": 1, "maxLength": MAX_TITLE},
            "description": {"type": "string", "maxLength": MAX_TEXT},
            "assignee": {"type": "string", "maxLength": 64, "description": "Only this worker may claim it."},
            "priority": {"type": "integer", "minimum": 0, "maximum": 3, "description": "0 low .. 3 urgent."},
            "depends_on": _IDS,
        },
        ("title",),
    ),
    "kanban_list": _schema(
        "kanban_list",
        "List the board: open tasks by default; status filters (or 'all'), ready=true shows what you could "
        "claim now, mine=true your own tasks.",
        {
            "status": {"type": "string", "enum": [*STATUSES, "all"]},
            "ready": {"type": "boolean"},
            "mine": {"type": "boolean"},
        },
        (),
    ),
    "kanban_show": _schema(
        "kanban_show",
        "One task in full: description, claim and lease, result, dependencies, links, comments, attachments. "
        "attachment: an attachment id to read its text.",
        {"task_id": _TASK, "attachment": {"type": "integer", "minimum": 1}},
    ),
    "kanban_claim": _schema(
        "kanban_claim",
        "Claim a ready task for yourself (task_id, or none for the most urgent ready one). The claim is a "
        "lease: keep it with kanban_heartbeat or it expires and another worker may take the task.",
        {"task_id": _TASK},
        (),
    ),
    "kanban_heartbeat": _schema(
        "kanban_heartbeat",
        "Renew your claim's lease on a task you are working on (do it well before the lease ends).",
        {"task_id": _TASK},
    ),
    "kanban_complete": _schema(
        "kanban_complete",
        "Finish a task you claimed: it becomes done with your result (what you did, where the output is).",
        {"task_id": _TASK, "result": {"type": "string", "maxLength": MAX_TEXT}},
    ),
    "kanban_block": _schema(
        "kanban_block",
        "Mark a task blocked with the reason (what is missing); your claim on it ends.",
        {"task_id": _TASK, "reason": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT}},
        ("task_id", "reason"),
    ),
    "kanban_unblock": _schema(
        "kanban_unblock",
        "Put a blocked task back to todo (once what blocked it is resolved); add a comment saying how.",
        {"task_id": _TASK, "comment": {"type": "string", "maxLength": MAX_TEXT}},
    ),
    "kanban_comment": _schema(
        "kanban_comment",
        "Add a comment to a task: progress, findings, questions for other agents.",
        {"task_id": _TASK, "body": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT}},
        ("task_id", "body"),
    ),
    "kanban_attach": _schema(
        "kanban_attach",
        "Attach a file of your workspace (at most 1 MB) to a task; other agents read it with kanban_show.",
        {"task_id": _TASK, "path": {"type": "string", "minLength": 1, "maxLength": 4096}},
        ("task_id", "path"),
    ),
    "kanban_link": _schema(
        "kanban_link",
        "Link a task to another: depends_on (it cannot start before the other is done), relates_to or "
        "duplicates. remove=true removes the link.",
        {
            "task_id": _TASK,
            "other_id": _TASK,
            "kind": {"type": "string", "enum": list(LINK_KINDS)},
            "remove": {"type": "boolean"},
        },
        ("task_id", "other_id", "kind"),
    ),
    "kanban_update": _schema(
        "kanban_update",
        "Edit a task: title, description, priority, assignee ('' for nobody), or status todo/review/cancelled. "
        "expected_version (from kanban_show) refuses the change if the task changed meanwhile.",
        {
            "task_id": _TASK,
            "title": {"type": "string", "minLength": 1, "maxLength": MAX_TITLE},
            "description": {"type": "string", "maxLength": MAX_TEXT},
            "priority": {"type": "integer", "minimum": 0, "maximum": 3},
            "assignee": {"type": "string", "maxLength": 64},
            "status": {"type": "string", "enum": ["todo", "review", "cancelled"]},
            "expected_version": {"type": "integer", "minimum": 1},
        },
    ),
}


# -- helpers ---------------------------------------------------------------------------------------------------


def _board(context: CallContext) -> Board:
    from ._board import Board  # the store and its SQL layer load with the first call

    assert context.host is not None
    return Board.for_system(context.host)


def _me(context: CallContext, agent: str | None) -> str:
    name = " ".join((agent or "").split())
    return name or context.session_id


def _lease(context: CallContext) -> float:
    value = context.plugin_config(TOOLSET).get("lease", DEFAULT_LEASE)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 1:
        raise ToolError(
            f"[plugins.kanban] lease must be a number of seconds >= 1, got {value!r}", retryable=False
        )
    return float(value)


def _claims(context: CallContext) -> dict[tuple[str, int], int]:
    return context.session.stash(CLAIMS_KEY, dict, cleanup=lambda _claims: None)


def _fence(context: CallContext, board: Board, task_id: int) -> int:
    fence = _claims(context).get((board.url, task_id))
    if fence is None:
        raise ToolError(f"you hold no claim on task #{task_id}; claim it first with kanban_claim")
    return fence


def _ts(value: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(value)) if value else "-"


def _line(t: dict[str, Any], now: float | None = None) -> str:
    now = time.time() if now is None else now
    who = f" @{t['assignee']}" if t["assignee"] else ""
    prio = f" p{t['priority']}" if t["priority"] else ""
    claim = ""
    if t.get("owner"):
        left = (t["lease_until"] or 0) - now
        claim = (
            f" (held by {t['owner']}, lease {left:.0f} s left)"
            if left >= 0
            else f" (lease of {t['owner']} expired)"
        )
    extra = f" (blocked: {t['blocker']})" if t["status"] == "blocked" and t["blocker"] else ""
    return f"#{t['id']} [{t['status']}]{prio}{who} {t['title']}{claim}{extra} v{t['version']}"


def _guarded(fn: Callable[..., str]) -> Callable[..., str]:
    """Board refusals become messages the model can act on."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        try:
            return fn(*args, **kwargs)
        except BoardError as err:
            raise ToolError(str(err)) from None

    return wrapper


# -- the tools ---------------------------------------------------------------------------------------------------


@_guarded
def kanban_create(
    title: str,
    description: str = "",
    assignee: str | None = None,
    priority: int = 0,
    depends_on: list[int] | None = None,
    agent: str | None = None,
    *,
    context: CallContext,
) -> str:
    title = " ".join(title.split())
    if not title:
        raise ToolError("a task needs a title")
    board = _board(context)
    task_id = board.create(
        title,
        created_by=_me(context, agent),
        description=description.strip(),
        priority=priority,
        assignee=(assignee or "").strip() or None,
        depends_on=depends_on,
    )
    return f"Created task #{task_id}: {title}"


@_guarded
def kanban_list(
    status: str | None = None,
    ready: bool = False,
    mine: bool = False,
    agent: str | None = None,
    *,
    context: CallContext,
) -> str:
    board = _board(context)
    me = _me(context, agent)
    rows = (
        board.ready(me, MAX_LIST + 1)
        if ready
        else board.list_tasks(status, me if mine else None, MAX_LIST + 1)
    )
    if not rows:
        return "No task is ready to claim." if ready else "No matching tasks on the board."
    lines = [_line(r) for r in rows[:MAX_LIST]]
    if len(rows) > MAX_LIST:
        lines.append(f"… more than {MAX_LIST} tasks; filter by status")
    return "\n".join(lines)


@_guarded
def kanban_show(
    task_id: int, attachment: int | None = None, agent: str | None = None, *, context: CallContext
) -> str:
    board = _board(context)
    if attachment is not None:
        item = board.attachment(task_id, attachment)
        data = bytes(item["content"])
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return f"{item['name']} ({item['size']:,} bytes, sha256 {item['sha256']}) is binary, not shown."
        return f"{item['name']} ({item['size']:,} bytes, by {item['author']}):\n{text}"
    t = board.detail(task_id)
    lines = [
        _line(t),
        f"created by {t['created_by']} at {_ts(t['created_at'])}, updated {_ts(t['updated_at'])}",
    ]
    if t["description"]:
        lines.append(t["description"])
    if t.get("result"):
        lines.append(f"result: {t['result']}")
    if t["depends_on"]:
        lines.append("depends on: " + ", ".join(f"#{d['id']} ({d['status']})" for d in t["depends_on"]))
    if t["needed_by"]:
        lines.append("needed by: " + ", ".join(f"#{n}" for n in t["needed_by"]))
    if t["links"]:
        lines.append("links: " + ", ".join(f"{kind} #{other}" for kind, other in t["links"]))
    for a in t["attachments"]:
        lines.append(f"attachment {a['id']}: {a['name']} ({a['size']:,} bytes, by {a['author']})")
    comments = t["comments"]
    shown = comments[-50:]
    if len(comments) > len(shown):
        lines.append(f"({len(comments) - len(shown)} older comments not shown)")
    lines += [f"- {c['author']} at {_ts(c['created_at'])}: {c['body']}" for c in shown]
    return "\n".join(lines)


@_guarded
def kanban_claim(task_id: int | None = None, agent: str | None = None, *, context: CallContext) -> str:
    board = _board(context)
    me, lease = _me(context, agent), _lease(context)
    if task_id is None:
        got = board.claim_next(me, lease)
        if got is None:
            return "No task is ready to claim."
        task, fence = got
    else:
        fence = board.claim(task_id, me, lease)
        task = board.get(task_id)
    _claims(context)[(board.url, int(task["id"]))] = fence
    return f"Claimed: {_line(task)}. Renew within {lease:.0f} s with kanban_heartbeat.\n{task['description']}".rstrip()


@_guarded
def kanban_heartbeat(task_id: int, agent: str | None = None, *, context: CallContext) -> str:
    board = _board(context)
    until = board.heartbeat(task_id, _me(context, agent), _fence(context, board, task_id), _lease(context))
    return f"Lease on task #{task_id} renewed until {_ts(until)}."


@_guarded
def kanban_complete(task_id: int, result: str = "", agent: str | None = None, *, context: CallContext) -> str:
    board = _board(context)
    task = board.complete(task_id, _me(context, agent), _fence(context, board, task_id), result.strip())
    _claims(context).pop((board.url, task_id), None)
    return f"Done: {_line(task)}"


@_guarded
def kanban_block(task_id: int, reason: str, agent: str | None = None, *, context: CallContext) -> str:
    board = _board(context)
    reason = reason.strip()
    if not reason:
        raise ToolError("say what blocks the task in 'reason'")
    fence = _claims(context).pop((board.url, task_id), None)
    task = board.block(task_id, _me(context, agent), reason, fence)
    return f"Blocked: {_line(task)}"


@_guarded
def kanban_unblock(task_id: int, comment: str = "", agent: str | None = None, *, context: CallContext) -> str:
    board = _board(context)
    task = board.unblock(task_id)
    if comment.strip():
        board.comment(task_id, _me(context, agent), comment.strip())
    return f"Unblocked: {_line(task)}"


@_guarded
def kanban_comment(task_id: int, body: str, agent: str | None = None, *, context: CallContext) -> str:
    body = body.strip()
    if not body:
        raise ToolError("the comment is empty")
    _board(context).comment(task_id, _me(context, agent), body)
    return f"Comment added to task #{task_id}."


@_guarded
def kanban_attach(task_id: int, path: str, agent: str | None = None, *, context: CallContext) -> str:
    from pathlib import Path

    from ._board_terms import MAX_ATTACHMENT

    resolved = context.guard_path(path, "read")
    file = Path(resolved)
    if not file.is_file():
        raise ToolError(f"{path} is not a file")
    size = file.stat().st_size
    if size > MAX_ATTACHMENT:
        raise ToolError(f"{path} is {size:,} bytes; attachments are limited to {MAX_ATTACHMENT:,}")
    data = file.read_bytes()
    attachment_id = _board(context).attach(task_id, _me(context, agent), file.name, data)
    return f"Attached {file.name} ({len(data):,} bytes) to task #{task_id} as attachment {attachment_id}."


@_guarded
def kanban_link(
    task_id: int,
    other_id: int,
    kind: str,
    remove: bool = False,
    agent: str | None = None,
    *,
    context: CallContext,
) -> str:
    _board(context).link(task_id, other_id, kind, remove=remove)
    return f"{'Removed' if remove else 'Linked'}: #{task_id} {kind} #{other_id}."


@_guarded
def kanban_update(
    task_id: int,
    title: str | None = None,
    description: str | None = None,
    priority: int | None = None,
    assignee: str | None = None,
    status: str | None = None,
    expected_version: int | None = None,
    agent: str | None = None,
    *,
    context: CallContext,
) -> str:
    changes: dict[str, Any] = {}
    if title is not None:
        clean = " ".join(title.split())
        if not clean:
            raise ToolError("the title cannot be empty")
        changes["title"] = clean
    if description is not None:
        changes["description"] = description.strip()
    if priority is not None:
        changes["priority"] = priority
    if assignee is not None:
        changes["assignee"] = assignee.strip() or None
    if status is not None:
        changes["status"] = status
    if not changes:
        raise ToolError("nothing to change: give title, description, priority, assignee or status")
    task = _board(context).update(task_id, _me(context, agent), expected_version=expected_version, **changes)
    return f"Updated: {_line(task)}"


HANDLERS: dict[str, Callable[..., str]] = {
    "kanban_create": kanban_create,
    "kanban_list": kanban_list,
    "kanban_show": kanban_show,
    "kanban_claim": kanban_claim,
    "kanban_heartbeat": kanban_heartbeat,
    "kanban_complete": kanban_complete,
    "kanban_block": kanban_block,
    "kanban_unblock": kanban_unblock,
    "kanban_comment": kanban_comment,
    "kanban_attach": kanban_attach,
    "kanban_link": kanban_link,
    "kanban_update": kanban_update,
}
READ_ONLY = frozenset({"kanban_list", "kanban_show"})


def register(registry: ToolRegistry) -> None:
    for name, handler in HANDLERS.items():
        registry.register(
            name=name,
            toolset=TOOLSET,
            schema=SCHEMAS[name],
            handler=handler,
            emoji="🗂",
            max_result_size_chars=40_000 if name in READ_ONLY else 4_000,
            parallel_safe=name in READ_ONLY,
        )
