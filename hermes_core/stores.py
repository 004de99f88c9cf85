"""Shared SQL stores (the scheduler's jobs and runs, the kanban board): the same statements on SQLite and PostgreSQL.

A store is named by a URL: ``sqlite:////abs/path.db`` (the embedded default, a file in the data folder) or
``postgresql://user:password@host:5432/db`` (psycopg 3, the ``postgres`` extra), so several hosts can share one
database. Statements are written once with SQLAlchemy Core; the few dialect differences stay inside this module.

The rules every store here follows, so that what holds between processes on one host also holds between hosts:

- a claim is one conditional ``UPDATE ... WHERE owner IS NULL OR lease_until < :now ... RETURNING fence``: the
  database decides who wins, and the fencing counter it returns is carried by the winner's later writes
  (``... WHERE fence = :fence``), so a worker whose lease ran out and was taken over cannot write any more;
- "do this once" is an ``INSERT ... ON CONFLICT DO NOTHING`` on a unique key (``insert_ignore``);
- on SQLite every transaction starts with ``BEGIN IMMEDIATE`` under a busy timeout (WAL journal), so concurrent
  processes queue for the write lock instead of failing when a read lock would have to be upgraded.

Engines are made once per URL and process (``engine(url)``), tables once per engine (``ensure_tables``).
SQLAlchemy is imported on first use only: a host that never opens a store never pays for it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Engine, MetaData, Table
    from sqlalchemy.sql.dml import Insert

__all__ = ["StoreError", "engine", "ensure_tables", "insert_ignore", "is_postgres", "safe_url", "store_url"]

BUSY_TIMEOUT_S = 30.0
_lock = threading.Lock()
_engines: dict[str, Engine] = {}
_ready: set[tuple[int, int]] = set()


class StoreError(RuntimeError):
    """A store URL that cannot be used (unknown scheme, missing driver)."""


def store_url(value: Any, default: Path | None) -> str:
    """The URL of a store: ``value`` (a URL, or a path for SQLite) when set, else SQLite at ``default``."""
    if value is None or value == "":
        if default is None:
            raise StoreError("no store given")
        return _sqlite_url(default)
    if not isinstance(value, str | Path):
        raise StoreError(f"a store must be a URL or a path, got {type(value).__name__}")
    text = str(value)
    if "://" not in text:
        return _sqlite_url(Path(text).expanduser())
    scheme = text.split("://", 1)[0].lower()
    if scheme in ("postgres", "postgresql"):
        return "postgresql+psycopg://" + text.split("://", 1)[1]
    if scheme in ("sqlite", "postgresql+psycopg"):
        return text
    raise StoreError(f"unsupported store {safe_url(text)!r}: use sqlite:///PATH or postgresql://...")


def _sqlite_url(path: Path) -> str:
    return "sqlite:///" + str(path.resolve())


def safe_url(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    creds, _, host = rest.partition("@")
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in creds else url


def is_postgres(eng: Engine) -> bool:
    return eng.dialect.name == "postgresql"


def engine(url: str) -> Engine:
    """The engine of ``url`` for this process (made on first use, shared by every thread)."""
    with _lock:
        made = _engines.get(url)
        if made is None:
            made = _engines[url] = _make_engine(url)
        return made


def _make_engine(url: str) -> Engine:
    import sqlalchemy as sa

    if url.startswith("sqlite"):
        database = url.split("///", 1)[1] if "///" in url else ""
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        eng = sa.create_engine(
            url, connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False}, pool_pre_ping=False
        )
        _sqlite_events(eng)
        return eng
    try:
        return sa.create_engine(url, pool_pre_ping=True, pool_size=4, max_overflow=8)
    except ModuleNotFoundError as err:
        raise StoreError(
            f"{safe_url(url)} needs the PostgreSQL driver: pip install 'hermes-tools[postgres]' ({err})"
        ) from None


def _sqlite_events(eng: Engine) -> None:
    from sqlalchemy import event

    @event.listens_for(eng, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = (
            None  # the driver's own transaction handling is off: "begin" below starts them
        )
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(eng, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def ensure_tables(eng: Engine, metadata: MetaData) -> None:
    """Create ``metadata``'s missing tables and add its missing columns to older tables (once per process).

    Added columns must be nullable or have a server default. Concurrent first starts are serialized (SQLite:
    the immediate transaction; PostgreSQL: an advisory lock), so two processes never race on ``CREATE``.
    """
    key = (id(eng), id(metadata))
    if key in _ready:
        return
    import sqlalchemy as sa

    with eng.begin() as conn:
        if is_postgres(eng):
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(7236591)"))
        metadata.create_all(conn, checkfirst=True)
        inspector = sa.inspect(conn)
        for table in metadata.sorted_tables:
            have = {c["name"] for c in inspector.get_columns(table.name)}
            for column in table.columns:
                if column.name not in have:
                    conn.execute(sa.text(_add_column_sql(eng, table, column)))
    _ready.add(key)


def _add_column_sql(eng: Engine, table: Table, column: Any) -> str:
    kind = column.type.compile(dialect=eng.dialect)
    sql = f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}'
    default = column.server_default
    if default is not None:
        sql += f" DEFAULT {default.arg.text if hasattr(default.arg, 'text') else repr(default.arg)}"
    elif not column.nullable:
        raise StoreError(f"cannot add the required column {table.name}.{column.name} to an existing table")
    return sql


def insert_ignore(eng: Engine, table: Table, values: Mapping[str, Any], conflict: Iterable[str]) -> Insert:
    """``INSERT ... ON CONFLICT (conflict) DO NOTHING`` for ``eng``'s dialect (add ``.returning(...)`` to learn
    whether the row was inserted: no row comes back when it already existed)."""
    if is_postgres(eng):
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).values(**values).on_conflict_do_nothing(index_elements=list(conflict))
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table).values(**values).on_conflict_do_nothing(index_elements=list(conflict))
