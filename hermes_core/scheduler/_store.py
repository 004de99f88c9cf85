"""``JobStore``: the scheduler's jobs and runs in one SQL store (SQLite by default, PostgreSQL by URL).

Two tables. ``scheduler_jobs`` holds what to run and when (``last_slot``: the latest slot dealt with). ``scheduler_runs`` holds one row
per run, unique on ``(job_id, slot)``: a scheduler runs a slot only if its ``INSERT ... ON CONFLICT DO NOTHING``
inserted the row, so each slot runs once however many processes (or hosts sharing a database) schedule it. A run
row carries a lease its scheduler renews while the run goes on; a run whose scheduler died is marked
``abandoned`` once the lease has passed (never run twice). Manual runs (``run now``) have no slot.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import stores

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine, MetaData, Table

    from ..host import Host

__all__ = ["MAX_OUTPUT", "Job", "JobStore", "Run", "new_owner"]

MAX_OUTPUT = 20_000  # characters of a run's output kept in the store
FINISHED = ("ok", "error", "denied", "blocked", "skipped", "abandoned")


def new_owner() -> str:
    """A scheduler's name in the store: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


@dataclass
class Job:
    """A scheduled job: a tool call (``tool`` + ``arguments``) or an agent prompt (``prompt`` + model, toolsets,
    skills, ``max_turns``), delivered to ``deliver`` targets, run in ``workspace`` with the tools of
    ``selection`` (None: the host's selection). ``anchor`` starts ``every:`` grids; ``last_slot`` is the latest
    slot dealt with (run or skipped); ``catch_up`` (``once``/``skip``, None: the scheduler's) decides late slots."""

    id: str
    name: str
    schedule: str
    kind: str = "tool"
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    prompt: str | None = None
    model: str | None = None
    toolsets: list[str] | None = None
    skills: list[str] = field(default_factory=list)
    max_turns: int | None = None
    deliver: list[str] = field(default_factory=list)
    catch_up: str | None = None
    enabled: bool = True
    workspace: str | None = None
    selection: list[str] | None = None
    creator: dict[str, Any] = field(default_factory=dict)
    source: str = "tool"
    created_at: float = 0.0
    anchor: int = 0
    last_slot: int | None = None


@dataclass
class Run:
    """One run of a job: ``status`` is ``running`` or how it ended (ok, error, denied, blocked, skipped,
    abandoned); ``slot`` is None for a manual run; ``missed`` counts the slots a catch-up run stood for."""

    id: int
    job_id: str
    slot: int | None
    trigger: str
    status: str
    owner: str
    started_at: float
    finished_at: float | None = None
    duration_ms: float | None = None
    output: str = ""
    missed: int = 0
    session_id: str | None = None


_SPEC_FIELDS = ("tool", "arguments", "prompt", "model", "toolsets", "skills", "max_turns", "deliver")


def _metadata() -> tuple[MetaData, Table, Table]:
    import sqlalchemy as sa

    meta = sa.MetaData()
    jobs = sa.Table(
        "scheduler_jobs",
        meta,
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("schedule", sa.String(200), nullable=False),
        sa.Column("spec", sa.Text, nullable=False),  # JSON: tool/arguments or prompt/model/..., deliver
        sa.Column("catch_up", sa.String(8)),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("workspace", sa.Text),
        sa.Column("selection", sa.Text),  # JSON list or null
        sa.Column("creator", sa.Text),  # JSON
        sa.Column("source", sa.String(16), nullable=False, server_default="tool"),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("anchor", sa.BigInteger, nullable=False),
        sa.Column("last_slot", sa.BigInteger),
    )
    runs = sa.Table(
        "scheduler_runs",
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("job_id", sa.String(64), nullable=False, index=True),
        sa.Column("slot", sa.BigInteger),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float),
        sa.Column("duration_ms", sa.Float),
        sa.Column("output", sa.Text, nullable=False, server_default=""),
        sa.Column("missed", sa.Integer, nullable=False, server_default="0"),
        sa.Column("lease_until", sa.Float),
        sa.Column("session_id", sa.String(200)),
        sa.UniqueConstraint("job_id", "slot", name="runs_job_slot"),
    )
    return meta, jobs, runs


def _cut(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + f" …(cut, {len(text)} chars)"


class JobStore:
    """The jobs and runs at ``url`` (see ``hermes_core.stores``). Safe to share between threads and processes."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: Engine = stores.engine(url)
        self._meta, self.jobs, self.runs = _tables(self.engine)
        stores.ensure_tables(self.engine, self._meta)

    @classmethod
    def for_system(cls, system: Host) -> JobStore:
        """The store a system's config names (``[scheduler] store``), else ``<data dir>/scheduler/jobs.db``."""
        settings = system.config.data.get("scheduler") or {}
        return cls(stores.store_url(settings.get("store"), Path(system.data_dir) / "scheduler" / "jobs.db"))

    def __repr__(self) -> str:
        return f"<JobStore {stores.safe_url(self.url)}>"

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

    # -- jobs ------------------------------------------------------------------------------------------------

    def _row(self, job: Job) -> dict[str, Any]:
        data = asdict(job)
        spec = {k: data.pop(k) for k in _SPEC_FIELDS}
        data["spec"] = json.dumps(spec, ensure_ascii=False)
        data["selection"] = json.dumps(job.selection) if job.selection is not None else None
        data["creator"] = json.dumps(job.creator, ensure_ascii=False)
        return data

    @staticmethod
    def _job(row: Any) -> Job:
        data = dict(row._mapping)
        spec = json.loads(data.pop("spec") or "{}")
        data["selection"] = json.loads(data["selection"]) if data.get("selection") else None
        data["creator"] = json.loads(data["creator"]) if data.get("creator") else {}
        known = {f.name for f in fields(Job)}
        data.update({k: v for k, v in spec.items() if k in known})
        data["enabled"] = bool(data["enabled"])
        return Job(**{k: v for k, v in data.items() if k in known})

    def add(self, job: Job, *, limit: int | None = None) -> Job:
        """Store a new job; ``limit`` refuses it (``ValueError``) when that many jobs exist already."""
        import sqlalchemy as sa

        with self._tx() as conn:
            if limit is not None:
                count = conn.execute(sa.select(sa.func.count()).select_from(self.jobs)).scalar_one()
                if count >= limit:
                    raise ValueError(f"there are already {limit} jobs; remove some first")
            conn.execute(self.jobs.insert().values(**self._row(job)))
        return job

    def put(self, job: Job) -> None:
        """Insert or replace ``job`` (config jobs are synced this way)."""
        with self._tx() as conn:
            conn.execute(self.jobs.delete().where(self.jobs.c.id == job.id))
            conn.execute(self.jobs.insert().values(**self._row(job)))

    def get(self, job_id: str) -> Job | None:
        with self._tx() as conn:
            row = conn.execute(self.jobs.select().where(self.jobs.c.id == job_id)).first()
        return self._job(row) if row is not None else None

    def list_jobs(self, *, enabled_only: bool = False) -> list[Job]:
        query = self.jobs.select().order_by(self.jobs.c.created_at, self.jobs.c.id)
        if enabled_only:
            query = query.where(self.jobs.c.enabled.is_(True))
        with self._tx() as conn:
            return [self._job(r) for r in conn.execute(query)]

    def save(self, job: Job) -> None:
        """Write back a changed job (name, schedule, spec, enabled, anchor, last_slot...)."""
        row = self._row(job)
        row.pop("id")
        with self._tx() as conn:
            conn.execute(self.jobs.update().where(self.jobs.c.id == job.id).values(**row))

    def remove(self, job_id: str) -> bool:
        with self._tx() as conn:
            gone = conn.execute(self.jobs.delete().where(self.jobs.c.id == job_id)).rowcount
        return bool(gone)

    def advance(self, job_id: str, slot: int) -> None:
        """Mark ``slot`` dealt with (never moves ``last_slot`` back)."""
        import sqlalchemy as sa

        c = self.jobs.c
        with self._tx() as conn:
            conn.execute(
                self.jobs.update()
                .where(c.id == job_id, sa.or_(c.last_slot.is_(None), c.last_slot < slot))
                .values(last_slot=slot)
            )

    # -- runs ------------------------------------------------------------------------------------------------

    def claim_slot(
        self,
        job_id: str,
        slot: int,
        owner: str,
        now: float,
        lease: float,
        *,
        missed: int = 0,
        status: str = "running",
        output: str = "",
        session_id: str | None = None,
    ) -> int | None:
        """Insert the run of ``(job_id, slot)``; its id when this call inserted it, None when it existed already."""
        values: dict[str, Any] = {
            "job_id": job_id,
            "slot": slot,
            "trigger": "schedule",
            "status": status,
            "owner": owner,
            "started_at": now,
            "output": output,
            "missed": missed,
            "session_id": session_id,
            "lease_until": now + lease if status == "running" else None,
        }
        if status != "running":
            values.update(finished_at=now, duration_ms=0.0)
        stmt = stores.insert_ignore(self.engine, self.runs, values, ("job_id", "slot")).returning(
            self.runs.c.id
        )
        with self._tx() as conn:
            row = conn.execute(stmt).first()
        return int(row[0]) if row is not None else None

    def start_manual(self, job_id: str, owner: str, now: float, lease: float, session_id: str | None) -> int:
        """Record a manual run (no slot); ``RuntimeError`` while another run of the job holds a live lease."""
        import sqlalchemy as sa

        c = self.runs.c
        with self._tx() as conn:
            busy = conn.execute(
                sa.select(c.id)
                .where(c.job_id == job_id, c.status == "running", c.lease_until >= now)
                .limit(1)
            ).first()
            if busy is not None:
                raise RuntimeError(f"job {job_id} is running right now; try again later")
            row = conn.execute(
                self.runs.insert()
                .values(
                    job_id=job_id,
                    slot=None,
                    trigger="manual",
                    status="running",
                    owner=owner,
                    started_at=now,
                    lease_until=now + lease,
                    session_id=session_id,
                )
                .returning(c.id)
            ).first()
        assert row is not None
        return int(row[0])

    def is_running(self, job_id: str, now: float) -> bool:
        import sqlalchemy as sa

        c = self.runs.c
        with self._tx() as conn:
            return (
                conn.execute(
                    sa.select(c.id)
                    .where(c.job_id == job_id, c.status == "running", c.lease_until >= now)
                    .limit(1)
                ).first()
                is not None
            )

    def renew(self, run_ids: Iterable[int], owner: str, until: float) -> None:
        """Extend the leases of this owner's running runs."""
        ids = list(run_ids)
        if not ids:
            return
        c = self.runs.c
        with self._tx() as conn:
            conn.execute(
                self.runs.update()
                .where(c.id.in_(ids), c.owner == owner, c.status == "running")
                .values(lease_until=until)
            )

    def finish(
        self, run_id: int, owner: str, status: str, output: str, finished_at: float, duration_ms: float
    ) -> bool:
        """Record how a run ended; False when the run is no longer this owner's (it was reaped meanwhile)."""
        c = self.runs.c
        with self._tx() as conn:
            done = conn.execute(
                self.runs.update()
                .where(c.id == run_id, c.owner == owner, c.status == "running")
                .values(
                    status=status,
                    output=_cut(output),
                    finished_at=finished_at,
                    duration_ms=duration_ms,
                    lease_until=None,
                )
            ).rowcount
        return bool(done)

    def reap(self, now: float) -> int:
        """Mark runs whose scheduler stopped renewing their lease as ``abandoned``; how many."""
        c = self.runs.c
        with self._tx() as conn:
            return int(
                conn.execute(
                    self.runs.update()
                    .where(c.status == "running", c.lease_until < now)
                    .values(
                        status="abandoned",
                        finished_at=now,
                        output="the scheduler running it stopped before it finished (its lease ran out)",
                    )
                ).rowcount
            )

    def history(self, job_id: str | None = None, limit: int = 20) -> list[Run]:
        """The latest runs (of ``job_id``, else of every job), newest first."""
        c = self.runs.c
        query = self.runs.select().order_by(c.started_at.desc(), c.id.desc()).limit(limit)
        if job_id is not None:
            query = query.where(c.job_id == job_id)
        with self._tx() as conn:
            rows = conn.execute(query).all()
        keep = {f.name for f in fields(Run)}
        return [Run(**{k: v for k, v in r._mapping.items() if k in keep}) for r in rows]

    def run(self, run_id: int) -> Run | None:
        c = self.runs.c
        with self._tx() as conn:
            row = conn.execute(self.runs.select().where(c.id == run_id)).first()
        if row is None:
            return None
        keep = {f.name for f in fields(Run)}
        return Run(**{k: v for k, v in row._mapping.items() if k in keep})


_TABLES: dict[int, tuple[MetaData, Table, Table]] = {}


def _tables(eng: Engine) -> tuple[MetaData, Table, Table]:
    made = _TABLES.get(id(eng))
    if made is None:
        made = _TABLES[id(eng)] = _metadata()
    return made
