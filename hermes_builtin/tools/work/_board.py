"""``Board``: the kanban store shared by many workers (SQLite by default, PostgreSQL by URL; ``hermes_core.stores``).

Tasks are claimed with a lease. A claim is one conditional ``UPDATE ... WHERE (owner IS NULL OR lease_until <
:now) ... RETURNING fence``: of several workers claiming at once exactly one gets the row, and the fencing counter
it returns is carried by its later writes (heartbeat, complete, block, release: ``... WHERE owner = :me AND fence
= :fence``). A worker that stops heartbeating loses the claim when its lease passes; once another worker has
claimed the task, the first one's writes are refused (``ClaimLost``), so a late worker never overwrites the
newer one's work.

A task is ready when it is ``todo`` (or ``in_progress`` under an expired lease), every dependency is done or
cancelled, and it is assigned to nobody or to the claimer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hermes_core.stores as stores

from ._board_terms import (
    CLOSED,
    DEFAULT_LEASE,
    LINK_KINDS,
    MAX_ATTACHMENT,
    OPEN,
    STATUSES,
    BoardError,
    ClaimLost,
)

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine, MetaData, Table

    from hermes_core import Host

__all__ = ["CLOSED", "LINK_KINDS", "OPEN", "STATUSES", "Board", "BoardError", "ClaimLost"]


def _metadata() -> tuple[MetaData, dict[str, Table]]:
    import sqlalchemy as sa

    meta = sa.MetaData()
    tasks = sa.Table(
        "tasks",
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False, server_default=""),
        sa.Column("status", sa.String(16), nullable=False, server_default="todo"),
        sa.Column("assignee", sa.String(200)),
        sa.Column("blocker", sa.Text),
        sa.Column("priority", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column("version", sa.Integer, nullable=False, server_default="1"),
        sa.Column("owner", sa.String(200)),
        sa.Column("lease_until", sa.Float),
        sa.Column("fence", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("result", sa.Text),
    )
    comments = sa.Table(
        "comments",
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "task_id", sa.Integer, sa.ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False, index=True
        ),
        sa.Column("author", sa.String(200), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    deps = sa.Table(
        "deps",
        meta,
        sa.Column("task_id", sa.Integer, sa.ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("depends_on", sa.Integer, sa.ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True),
    )
    links = sa.Table(
        "task_links",
        meta,
        sa.Column("task_id", sa.Integer, sa.ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("other_id", sa.Integer, sa.ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("kind", sa.String(16), primary_key=True),
    )
    attachments = sa.Table(
        "attachments",
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "task_id", sa.Integer, sa.ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False, index=True
        ),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("content", sa.LargeBinary, nullable=False),
        sa.Column("author", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    return meta, {
        "tasks": tasks,
        "comments": comments,
        "deps": deps,
        "links": links,
        "attachments": attachments,
    }


_TABLES: dict[int, tuple[MetaData, dict[str, Table]]] = {}


class Board:
    """The kanban board at ``url``; ``clock`` (UNIX seconds) is injectable. Safe across threads and processes."""

    def __init__(self, url: str, *, clock: Callable[[], float] = time.time) -> None:
        self.url = url
        self.clock = clock
        self.engine: Engine = stores.engine(url)
        made = _TABLES.get(id(self.engine))
        if made is None:
            made = _TABLES[id(self.engine)] = _metadata()
        self._meta, tables = made
        self.tasks, self.comments, self.deps = tables["tasks"], tables["comments"], tables["deps"]
        self.links, self.attachments = tables["links"], tables["attachments"]
        stores.ensure_tables(self.engine, self._meta)

    @classmethod
    def for_system(cls, system: Host, **options: Any) -> Board:
        """The board ``[plugins.kanban] store`` names, else ``<data dir>/kanban/board.db``."""
        settings = system.plugin_config("kanban")
        url = stores.store_url(settings.get("store"), Path(system.data_dir) / "kanban" / "board.db")
        return cls(url, **options)

    def __repr__(self) -> str:
        return f"<Board {stores.safe_url(self.url)}>"

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

    # -- reading ---------------------------------------------------------------------------------------------

    def _task(self, conn: Connection, task_id: int) -> dict[str, Any]:
        row = conn.execute(self.tasks.select().where(self.tasks.c.id == task_id)).first()
        if row is None:
            raise BoardError(f"no task #{task_id} on the board")
        return dict(row._mapping)

    def get(self, task_id: int) -> dict[str, Any]:
        with self._tx() as conn:
            return self._task(conn, task_id)

    def _unfinished(self, conn: Connection, task_id: int) -> list[str]:
        import sqlalchemy as sa

        t, d = self.tasks, self.deps
        rows = conn.execute(
            sa.select(t.c.id, t.c.status)
            .select_from(d.join(t, t.c.id == d.c.depends_on))
            .where(d.c.task_id == task_id, t.c.status.not_in(CLOSED))
            .order_by(t.c.id)
        ).all()
        return [f"#{r.id} ({r.status})" for r in rows]

    def detail(self, task_id: int) -> dict[str, Any]:
        """The task with ``depends_on``, ``needed_by``, ``links``, ``comments`` and ``attachments`` (no content)."""
        import sqlalchemy as sa

        t, d, c, a, lk = self.tasks, self.deps, self.comments, self.attachments, self.links
        with self._tx() as conn:
            task = self._task(conn, task_id)
            task["depends_on"] = [
                dict(r._mapping)
                for r in conn.execute(
                    sa.select(t.c.id, t.c.status, t.c.title)
                    .select_from(d.join(t, t.c.id == d.c.depends_on))
                    .where(d.c.task_id == task_id)
                    .order_by(t.c.id)
                )
            ]
            task["needed_by"] = [
                r.task_id for r in conn.execute(sa.select(d.c.task_id).where(d.c.depends_on == task_id))
            ]
            task["links"] = [
                (r.kind, r.other_id)
                for r in conn.execute(sa.select(lk.c.kind, lk.c.other_id).where(lk.c.task_id == task_id))
            ] + [
                (f"{r.kind} (from)", r.task_id)
                for r in conn.execute(sa.select(lk.c.kind, lk.c.task_id).where(lk.c.other_id == task_id))
            ]
            task["comments"] = [
                dict(r._mapping)
                for r in conn.execute(
                    sa.select(c.c.author, c.c.body, c.c.created_at)
                    .where(c.c.task_id == task_id)
                    .order_by(c.c.id)
                )
            ]
            task["attachments"] = [
                dict(r._mapping)
                for r in conn.execute(
                    sa.select(a.c.id, a.c.name, a.c.size, a.c.sha256, a.c.author, a.c.created_at)
                    .where(a.c.task_id == task_id)
                    .order_by(a.c.id)
                )
            ]
        return task

    def attachment(self, task_id: int, attachment_id: int) -> dict[str, Any]:
        a = self.attachments
        with self._tx() as conn:
            row = conn.execute(a.select().where(a.c.id == attachment_id, a.c.task_id == task_id)).first()
        if row is None:
            raise BoardError(f"task #{task_id} has no attachment {attachment_id}")
        return dict(row._mapping)

    def list_tasks(
        self, status: str | None = None, who: str | None = None, limit: int = 200
    ) -> list[dict[str, Any]]:
        """Tasks by priority: open ones by default, ``status`` (or ``all``), held by or assigned to ``who``."""
        import sqlalchemy as sa

        c = self.tasks.c
        query = self.tasks.select().order_by(c.priority.desc(), c.id).limit(limit)
        if status in (None, ""):
            query = query.where(c.status.in_(OPEN))
        elif status != "all":
            query = query.where(c.status == status)
        if who:
            query = query.where(sa.or_(c.assignee == who, c.owner == who))
        with self._tx() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def _ready_clause(self, me: str, now: float) -> Any:
        import sqlalchemy as sa

        c, d = self.tasks.c, self.deps
        dep = self.tasks.alias("dep")
        waiting = (
            sa.select(sa.literal(1))
            .select_from(d.join(dep, dep.c.id == d.c.depends_on))
            .where(d.c.task_id == c.id, dep.c.status.not_in(CLOSED))
            .exists()
        )
        return sa.and_(
            c.status.in_(("todo", "in_progress")),
            sa.or_(c.owner.is_(None), c.lease_until < now),
            sa.or_(c.assignee.is_(None), c.assignee == me),
            ~waiting,
        )

    def ready(self, me: str = "", limit: int = 50) -> list[dict[str, Any]]:
        """Tasks ``me`` could claim now, by priority."""
        c = self.tasks.c
        query = (
            self.tasks.select()
            .where(self._ready_clause(me, self.clock()))
            .order_by(c.priority.desc(), c.id)
            .limit(limit)
        )
        with self._tx() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    # -- writing ---------------------------------------------------------------------------------------------

    def create(
        self,
        title: str,
        *,
        created_by: str,
        description: str = "",
        priority: int = 0,
        assignee: str | None = None,
        depends_on: list[int] | None = None,
    ) -> int:
        now = self.clock()
        with self._tx() as conn:
            task_id = conn.execute(
                self.tasks.insert()
                .values(
                    title=title,
                    description=description,
                    status="todo",
                    assignee=assignee or None,
                    priority=priority,
                    created_by=created_by,
                    created_at=now,
                    updated_at=now,
                    version=1,
                    fence=0,
                )
                .returning(self.tasks.c.id)
            ).scalar_one()
            for dep in dict.fromkeys(depends_on or ()):
                self._add_dep(conn, int(task_id), dep)
        return int(task_id)

    def _add_dep(self, conn: Connection, task_id: int, dep: int) -> None:
        import sqlalchemy as sa

        if dep == task_id:
            raise BoardError("a task cannot depend on itself")
        self._task(conn, dep)
        # refuse a cycle: does `dep` already (transitively) depend on `task_id`?
        cycle = conn.execute(
            sa.text(
                "WITH RECURSIVE up(id) AS (SELECT :dep UNION SELECT d.depends_on FROM deps d JOIN up ON "
                "d.task_id = up.id) SELECT 1 FROM up WHERE id = :task"
            ),
            {"dep": dep, "task": task_id},
        ).first()
        if cycle is not None:
            raise BoardError(f"#{task_id} cannot depend on #{dep}: #{dep} already depends on #{task_id}")
        conn.execute(
            stores.insert_ignore(
                self.engine, self.deps, {"task_id": task_id, "depends_on": dep}, ("task_id", "depends_on")
            )
        )

    def _touch(self, conn: Connection, task_id: int, **values: Any) -> None:
        c = self.tasks.c
        conn.execute(
            self.tasks.update()
            .where(c.id == task_id)
            .values(updated_at=self.clock(), version=c.version + 1, **values)
        )

    def claim(self, task_id: int, me: str, lease: float = DEFAULT_LEASE) -> int:
        """Claim task ``task_id`` for ``me``: the fencing token to carry. Claiming a task one holds renews it."""
        c = self.tasks.c
        now = self.clock()
        with self._tx() as conn:
            held = conn.execute(
                self.tasks.update()
                .where(c.id == task_id, c.owner == me, c.lease_until >= now, c.status == "in_progress")
                .values(lease_until=now + lease)
                .returning(c.fence)
            ).first()
            if held is not None:
                return int(held[0])
            won = conn.execute(
                self.tasks.update()
                .where(c.id == task_id, self._ready_clause(me, now))
                .values(
                    owner=me,
                    lease_until=now + lease,
                    fence=c.fence + 1,
                    status="in_progress",
                    blocker=None,
                    updated_at=now,
                    version=c.version + 1,
                )
                .returning(c.fence)
            ).first()
            if won is not None:
                return int(won[0])
            raise BoardError(self._why_not(conn, task_id, me, now))

    def _why_not(self, conn: Connection, task_id: int, me: str, now: float) -> str:
        t = self._task(conn, task_id)
        if t["status"] in CLOSED:
            return f"task #{task_id} is {t['status']}; nothing to claim"
        if t["status"] in ("blocked", "review"):
            return f"task #{task_id} is {t['status']}" + (f" ({t['blocker']})" if t["blocker"] else "")
        if t["assignee"] not in (None, me):
            return f"task #{task_id} is assigned to {t['assignee']}"
        waiting = self._unfinished(conn, task_id)
        if waiting:
            return f"task #{task_id} waits on unfinished dependencies: {', '.join(waiting)}"
        left = (t["lease_until"] or now) - now
        return f"task #{task_id} is claimed by {t['owner']} (lease for another {left:.0f} s)"

    def claim_next(self, me: str, lease: float = DEFAULT_LEASE) -> tuple[dict[str, Any], int] | None:
        """Claim the most urgent ready task: ``(task, fence)``, or None when none is ready."""
        for _ in range(50):  # a candidate another worker took meanwhile: try the next one
            candidates = self.ready(me, limit=10)
            if not candidates:
                return None
            for task in candidates:
                try:
                    fence = self.claim(int(task["id"]), me, lease)
                except BoardError:
                    continue
                return self.get(int(task["id"])), fence
        return None

    def _fenced(self, conn: Connection, task_id: int, me: str, fence: int, **values: Any) -> dict[str, Any]:
        c = self.tasks.c
        row = conn.execute(
            self.tasks.update()
            .where(c.id == task_id, c.owner == me, c.fence == fence)
            .values(updated_at=self.clock(), version=c.version + 1, **values)
            .returning(*self.tasks.c)
        ).first()
        if row is None:
            t = self._task(conn, task_id)
            holder = f"it is now held by {t['owner']}" if t["owner"] else f"it is {t['status']} and unclaimed"
            raise ClaimLost(
                f"your claim on task #{task_id} is gone ({holder}); claim it again before working on it"
            )
        return dict(row._mapping)

    def heartbeat(self, task_id: int, me: str, fence: int, lease: float = DEFAULT_LEASE) -> float:
        """Extend ``me``'s claim; the new end of the lease. A lapsed lease nobody took over is renewed too."""
        until = self.clock() + lease
        with self._tx() as conn:
            self._fenced(conn, task_id, me, fence, lease_until=until)
        return until

    def complete(self, task_id: int, me: str, fence: int, result: str = "") -> dict[str, Any]:
        with self._tx() as conn:
            return self._fenced(
                conn, task_id, me, fence, status="done", result=result, owner=None, lease_until=None
            )

    def release(self, task_id: int, me: str, fence: int) -> dict[str, Any]:
        with self._tx() as conn:
            return self._fenced(conn, task_id, me, fence, status="todo", owner=None, lease_until=None)

    def block(self, task_id: int, me: str, reason: str, fence: int | None = None) -> dict[str, Any]:
        """Block a task with ``reason``: the claimer (with its fence), or anyone while nobody holds it."""
        c = self.tasks.c
        now = self.clock()
        with self._tx() as conn:
            if fence is not None:
                return self._fenced(
                    conn, task_id, me, fence, status="blocked", blocker=reason, owner=None, lease_until=None
                )
            t = self._task(conn, task_id)
            if t["status"] in CLOSED:
                raise BoardError(f"task #{task_id} is {t['status']}")
            row = conn.execute(
                self.tasks.update()
                .where(c.id == task_id, (c.owner.is_(None)) | (c.lease_until < now))
                .values(
                    status="blocked",
                    blocker=reason,
                    owner=None,
                    lease_until=None,
                    updated_at=now,
                    version=c.version + 1,
                )
                .returning(*self.tasks.c)
            ).first()
            if row is None:
                raise BoardError(
                    f"task #{task_id} is claimed by {t['owner']}; only its holder may block it now"
                )
            return dict(row._mapping)

    def unblock(self, task_id: int) -> dict[str, Any]:
        with self._tx() as conn:
            t = self._task(conn, task_id)
            if t["status"] != "blocked":
                raise BoardError(f"task #{task_id} is {t['status']}, not blocked")
            self._touch(conn, task_id, status="todo", blocker=None)
            return self._task(conn, task_id)

    def comment(self, task_id: int, author: str, body: str) -> None:
        with self._tx() as conn:
            self._task(conn, task_id)
            conn.execute(
                self.comments.insert().values(
                    task_id=task_id, author=author, body=body, created_at=self.clock()
                )
            )
            self._touch(conn, task_id)

    def attach(self, task_id: int, author: str, name: str, content: bytes) -> int:
        if len(content) > MAX_ATTACHMENT:
            raise BoardError(
                f"{name} is {len(content):,} bytes; attachments are limited to {MAX_ATTACHMENT:,}"
            )
        with self._tx() as conn:
            self._task(conn, task_id)
            attachment_id = conn.execute(
                self.attachments.insert()
                .values(
                    task_id=task_id,
                    name=name,
                    size=len(content),
                    sha256=_sha256(content),
                    content=content,
                    author=author,
                    created_at=self.clock(),
                )
                .returning(self.attachments.c.id)
            ).scalar_one()
            self._touch(conn, task_id)
        return int(attachment_id)

    def link(self, task_id: int, other: int, kind: str, *, remove: bool = False) -> None:
        """Add (or remove) a link: ``depends_on`` is a dependency the board enforces; the others inform."""
        if kind not in LINK_KINDS:
            raise BoardError(f"unknown link kind {kind!r}; use one of {', '.join(LINK_KINDS)}")
        with self._tx() as conn:
            self._task(conn, task_id)
            self._task(conn, other)
            if kind == "depends_on":
                if remove:
                    d = self.deps.c
                    conn.execute(self.deps.delete().where(d.task_id == task_id, d.depends_on == other))
                else:
                    self._add_dep(conn, task_id, other)
            elif remove:
                lk = self.links.c
                conn.execute(
                    self.links.delete().where(lk.task_id == task_id, lk.other_id == other, lk.kind == kind)
                )
            else:
                if task_id == other:
                    raise BoardError("a task cannot link to itself")
                values = {"task_id": task_id, "other_id": other, "kind": kind}
                conn.execute(
                    stores.insert_ignore(self.engine, self.links, values, ("task_id", "other_id", "kind"))
                )
            self._touch(conn, task_id)

    def update(
        self, task_id: int, me: str, *, expected_version: int | None = None, **changes: Any
    ) -> dict[str, Any]:
        """Change fields (title, description, priority, assignee, status); ``expected_version`` refuses the change
        when the task changed meanwhile. Moving a task claimed by someone else is refused."""
        now = self.clock()
        with self._tx() as conn:
            t = self._task(conn, task_id)
            if expected_version is not None and expected_version != t["version"]:
                raise BoardError(
                    f"task #{task_id} changed meanwhile (version {t['version']}, you expected {expected_version}); "
                    "look at it again with kanban_show"
                )
            status = changes.get("status")
            if status is not None and status != t["status"]:
                held = t["owner"] is not None and (t["lease_until"] or 0) >= now
                if held and t["owner"] != me:
                    raise BoardError(f"task #{task_id} is claimed by {t['owner']}; it cannot be moved now")
                if status in ("in_progress", "done"):
                    raise BoardError(f"use kanban_claim / kanban_complete to move a task to {status}")
                if status == "blocked":
                    raise BoardError("use kanban_block (it needs the reason)")
                if status == "review":
                    waiting = self._unfinished(conn, task_id)
                    if waiting:
                        raise BoardError(
                            f"task #{task_id} waits on unfinished dependencies: {', '.join(waiting)}"
                        )
                changes.update(owner=None, lease_until=None, blocker=None)
            self._touch(conn, task_id, **changes)
            return self._task(conn, task_id)


def _sha256(content: bytes) -> str:
    import hashlib  # not at import: it loads OpenSSL's library, and attachments are rare

    return hashlib.sha256(content).hexdigest()
