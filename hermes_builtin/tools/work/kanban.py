"""``kanban_create``, ``kanban_list``, ``kanban_update``: a task board shared by several agents.

The board lives in ``<data dir>/kanban/board.db`` (SQLite, WAL, busy timeout). Every change runs in a
``BEGIN IMMEDIATE`` transaction, so concurrent processes queue up and never lose updates. An agent is
identified by its session id (``context.session_id``) unless it names itself with ``agent``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry

from ._state import connect_sqlite, immediate

if TYPE_CHECKING:
    import sqlite3

TOOLSET = "kanban"
STATUSES = ("todo", "in_progress", "blocked", "review", "done", "cancelled")
OPEN = ("todo", "in_progress", "blocked", "review")
MAX_TITLE = 200
MAX_TEXT = 4_000
MAX_LIST = 200

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'todo',
    assignee TEXT,
    blocker TEXT,
    priority INTEGER NOT NULL DEFAULT 0,
    created_by TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    version INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS comments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    author TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS deps (
    task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    depends_on INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    PRIMARY KEY (task_id, depends_on)
);
CREATE INDEX IF NOT EXISTS comments_task ON comments(task_id);
CREATE INDEX IF NOT EXISTS tasks_status ON tasks(status);
"""

_AGENT = {"type": "string", "maxLength": 64, "description": "Your agent name (default: your session id)."}
_IDS = {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 20}

CREATE_SCHEMA: dict[str, Any] = {
    "name": "kanban_create",
    "description": (
        "Add a task to the shared kanban board (visible to every agent). Returns its id. "
        "depends_on: ids of tasks that must be done before this one can start."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": MAX_TITLE},
            "description": {"type": "string", "maxLength": MAX_TEXT},
            "assignee": {"type": "string", "maxLength": 64},
            "priority": {"type": "integer", "minimum": 0, "maximum": 3, "description": "0 low .. 3 urgent."},
            "depends_on": _IDS,
            "agent": _AGENT,
        },
        "required": ["title"],
        "additionalProperties": False,
    },
}

LIST_SCHEMA: dict[str, Any] = {
    "name": "kanban_list",
    "description": (
        "Show the kanban board: open tasks by default, filtered by status and/or assignee. "
        "Pass task_id to see one task in full with its comments and dependencies."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "task_id": {"type": "integer", "minimum": 1},
            "status": {"type": "string", "enum": [*STATUSES, "all"], "description": "Default: open tasks."},
            "assignee": {"type": "string", "maxLength": 64, "description": "'me' for your own tasks."},
            "agent": _AGENT,
        },
        "additionalProperties": False,
    },
}

UPDATE_SCHEMA: dict[str, Any] = {
    "name": "kanban_update",
    "description": (
        "Change a kanban task. claim=true assigns it to you and starts it, failing if another agent holds it. "
        "status blocked needs a blocker (the reason); in_progress/review/done need every dependency done. "
        "Add a comment to report progress. Use expected_version (shown by kanban_list) to refuse the change "
        "if someone else changed the task meanwhile."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "task_id": {"type": "integer", "minimum": 1},
            "status": {"type": "string", "enum": list(STATUSES)},
            "claim": {"type": "boolean"},
            "assignee": {"type": "string", "maxLength": 64, "description": "'' to unassign."},
            "title": {"type": "string", "minLength": 1, "maxLength": MAX_TITLE},
            "description": {"type": "string", "maxLength": MAX_TEXT},
            "priority": {"type": "integer", "minimum": 0, "maximum": 3},
            "blocker": {"type": "string", "maxLength": MAX_TEXT},
            "comment": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT},
            "add_dependencies": _IDS,
            "remove_dependencies": _IDS,
            "expected_version": {"type": "integer", "minimum": 1},
            "agent": _AGENT,
        },
        "required": ["task_id"],
        "additionalProperties": False,
    },
}


def _open(context: CallContext) -> sqlite3.Connection:
    conn = connect_sqlite(context.data_dir / TOOLSET / "board.db")
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'deps'").fetchone() is None:
            conn.executescript("BEGIN IMMEDIATE;" + _SCHEMA_SQL + "COMMIT;")
    except BaseException:
        conn.close()
        raise
    return conn


def _me(context: CallContext, agent: str | None) -> str:
    name = " ".join((agent or "").split())
    return name or context.session_id


def _task(conn: sqlite3.Connection, task_id: int) -> dict[str, Any]:
    conn.row_factory = _dict_row
    row = conn.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
    if row is None:
        raise ToolError(f"no task #{task_id} on the board")
    return dict(row)


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {d[0]: v for d, v in zip(cursor.description, row, strict=True)}


def _unfinished_deps(conn: sqlite3.Connection, task_id: int) -> list[str]:
    rows = conn.execute(
        "SELECT t.id, t.status FROM deps d JOIN tasks t ON t.id = d.depends_on "
        "WHERE d.task_id = ? AND t.status NOT IN ('done', 'cancelled') ORDER BY t.id",
        (task_id,),
    ).fetchall()
    return [f"#{r['id']} ({r['status']})" for r in rows]


def _add_deps(conn: sqlite3.Connection, task_id: int, deps: list[int]) -> None:
    for dep in dict.fromkeys(deps):
        if dep == task_id:
            raise ToolError("a task cannot depend on itself")
        _task(conn, dep)
        # refuse a cycle: does ``dep`` already (transitively) depend on ``task_id``?
        cycle = conn.execute(
            "WITH RECURSIVE up(id) AS (SELECT ? UNION SELECT d.depends_on FROM deps d JOIN up ON d.task_id = up.id) "
            "SELECT 1 FROM up WHERE id = ?",
            (dep, task_id),
        ).fetchone()
        if cycle is not None:
            raise ToolError(f"#{task_id} cannot depend on #{dep}: #{dep} already depends on #{task_id}")
        conn.execute("INSERT OR IGNORE INTO deps (task_id, depends_on) VALUES (?, ?)", (task_id, dep))


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
    """Create a task and return its id."""
    title = " ".join(title.split())
    if not title:
        raise ToolError("a task needs a title")
    me = _me(context, agent)
    conn = _open(context)
    try:
        with immediate(conn):
            now = time.time()
            cur = conn.execute(
                "INSERT INTO tasks (title, description, assignee, priority, created_by, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (title, description.strip(), (assignee or "").strip() or None, priority, me, now, now),
            )
            task_id = int(cur.lastrowid or 0)
            _add_deps(conn, task_id, depends_on or [])
    finally:
        conn.close()
    return f"Created task #{task_id}: {title}"


def _line(t: dict[str, Any]) -> str:
    who = f" @{t['assignee']}" if t["assignee"] else ""
    prio = f" p{t['priority']}" if t["priority"] else ""
    extra = f" (blocked: {t['blocker']})" if t["status"] == "blocked" and t["blocker"] else ""
    return f"#{t['id']} [{t['status']}]{prio}{who} {t['title']}{extra} v{t['version']}"


def kanban_list(
    task_id: int | None = None,
    status: str | None = None,
    assignee: str | None = None,
    agent: str | None = None,
    *,
    context: CallContext,
) -> str:
    """The board (filtered) or one task in full."""
    conn = _open(context)
    conn.row_factory = _dict_row
    try:
        if task_id is not None:
            return _detail(conn, task_id)
        sql, params = "SELECT * FROM tasks WHERE 1=1", []
        if status in (None, ""):
            sql += f" AND status IN ({','.join('?' * len(OPEN))})"
            params += list(OPEN)
        elif status != "all":
            sql += " AND status = ?"
            params.append(status)
        if assignee:
            sql += " AND assignee = ?"
            params.append(_me(context, agent) if assignee == "me" else assignee)
        sql += " ORDER BY priority DESC, id LIMIT ?"
        rows = conn.execute(sql, [*params, MAX_LIST + 1]).fetchall()
    finally:
        conn.close()
    if not rows:
        return "No matching tasks on the board."
    lines = [_line(r) for r in rows[:MAX_LIST]]
    if len(rows) > MAX_LIST:
        lines.append(f"… more than {MAX_LIST} tasks; filter by status or assignee")
    return "\n".join(lines)


def _detail(conn: sqlite3.Connection, task_id: int) -> str:
    t = _task(conn, task_id)
    deps = conn.execute(
        "SELECT t.id, t.status FROM deps d JOIN tasks t ON t.id = d.depends_on WHERE d.task_id = ? ORDER BY t.id",
        (task_id,),
    ).fetchall()
    dependents = conn.execute(
        "SELECT task_id FROM deps WHERE depends_on = ? ORDER BY task_id", (task_id,)
    ).fetchall()
    comments = conn.execute(
        "SELECT author, body, created_at FROM comments WHERE task_id = ? ORDER BY id", (task_id,)
    ).fetchall()
    lines = [
        _line(t),
        f"created by {t['created_by']} at {_ts(t['created_at'])}, updated {_ts(t['updated_at'])}",
    ]
    if t["description"]:
        lines.append(t["description"])
    if deps:
        lines.append("depends on: " + ", ".join(f"#{d['id']} ({d['status']})" for d in deps))
    if dependents:
        lines.append("needed by: " + ", ".join(f"#{d['task_id']}" for d in dependents))
    shown = comments[-50:]
    if len(comments) > len(shown):
        lines.append(f"({len(comments) - len(shown)} older comments not shown)")
    lines += [f"- {c['author']} at {_ts(c['created_at'])}: {c['body']}" for c in shown]
    return "\n".join(lines)


def _ts(value: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(value))


def kanban_update(
    task_id: int,
    status: str | None = None,
    claim: bool = False,
    assignee: str | None = None,
    title: str | None = None,
    description: str | None = None,
    priority: int | None = None,
    blocker: str | None = None,
    comment: str | None = None,
    add_dependencies: list[int] | None = None,
    remove_dependencies: list[int] | None = None,
    expected_version: int | None = None,
    agent: str | None = None,
    *,
    context: CallContext,
) -> str:
    """Apply every requested change to one task in a single transaction."""
    me = _me(context, agent)
    conn = _open(context)
    conn.row_factory = _dict_row
    try:
        with immediate(conn):
            t = _task(conn, task_id)
            if expected_version is not None and expected_version != t["version"]:
                raise ToolError(
                    f"task #{task_id} changed meanwhile (version {t['version']}, you expected {expected_version}); "
                    "look at it again with kanban_list"
                )
            changes: dict[str, Any] = {}
            notes: list[str] = []
            if claim:
                if t["assignee"] not in (None, me):
                    raise ToolError(f"task #{task_id} is already claimed by {t['assignee']}")
                if t["status"] in ("done", "cancelled"):
                    raise ToolError(f"task #{task_id} is {t['status']}; nothing to claim")
                changes["assignee"] = me
                if status is None and t["status"] == "todo":
                    status = "in_progress"
            if assignee is not None and not claim:
                changes["assignee"] = assignee.strip() or None
            if title is not None:
                clean = " ".join(title.split())
                if not clean:
                    raise ToolError("the title cannot be empty")
                changes["title"] = clean
            if description is not None:
                changes["description"] = description.strip()
            if priority is not None:
                changes["priority"] = priority
            if remove_dependencies:
                conn.executemany(
                    "DELETE FROM deps WHERE task_id = ? AND depends_on = ?",
                    [(task_id, d) for d in remove_dependencies],
                )
            if add_dependencies:
                _add_deps(conn, task_id, add_dependencies)
            if blocker is not None:
                changes["blocker"] = blocker.strip() or None
            if status is not None and status != t["status"]:
                if status == "blocked" and not (changes.get("blocker") or t["blocker"]):
                    raise ToolError("status blocked needs a 'blocker' saying what blocks the task")
                if status in ("in_progress", "review", "done"):
                    waiting = _unfinished_deps(conn, task_id)
                    if waiting:
                        raise ToolError(
                            f"task #{task_id} waits on unfinished dependencies: {', '.join(waiting)}"
                        )
                if status != "blocked" and blocker is None:
                    changes["blocker"] = None
                changes["status"] = status
                notes.append(f"{t['status']} -> {status}")
            if comment is not None:
                body = comment.strip()
                if not body:
                    raise ToolError("the comment is empty")
                conn.execute(
                    "INSERT INTO comments (task_id, author, body, created_at) VALUES (?, ?, ?, ?)",
                    (task_id, me, body, time.time()),
                )
                notes.append("comment added")
            if not changes and not notes and not add_dependencies and not remove_dependencies:
                raise ToolError("nothing to change: give status, claim, assignee, comment or another field")
            sets = ", ".join(f"{k} = ?" for k in changes)
            conn.execute(
                f"UPDATE tasks SET {sets + ', ' if sets else ''}updated_at = ?, version = version + 1 WHERE id = ?",
                [*changes.values(), time.time(), task_id],
            )
            after = _task(conn, task_id)
    finally:
        conn.close()
    return f"Updated: {_line(after)}" + (f" ({'; '.join(notes)})" if notes else "")


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="kanban_create",
        toolset=TOOLSET,
        schema=CREATE_SCHEMA,
        handler=kanban_create,
        emoji="🗂",
        max_result_size_chars=2_000,
    )
    registry.register(
        name="kanban_list",
        toolset=TOOLSET,
        schema=LIST_SCHEMA,
        handler=kanban_list,
        emoji="🗂",
        max_result_size_chars=40_000,
        parallel_safe=True,
    )
    registry.register(
        name="kanban_update",
        toolset=TOOLSET,
        schema=UPDATE_SCHEMA,
        handler=kanban_update,
        emoji="🗂",
        max_result_size_chars=2_000,
    )
