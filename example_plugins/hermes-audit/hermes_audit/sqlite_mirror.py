"""The optional SQLite mirror of the audit file, for querying (``SELECT tool, count(*) FROM calls ...``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["COLUMNS", "SqliteMirror", "sync_sqlite"]

COLUMNS: tuple[tuple[str, str], ...] = (
    ("seq", "INTEGER PRIMARY KEY"),
    ("time", "TEXT NOT NULL"),
    ("call_id", "TEXT"),
    ("session", "TEXT"),
    ("tool", "TEXT NOT NULL"),
    ("toolset", "TEXT"),
    ("plugin", "TEXT"),
    ("args_sha256", "TEXT"),
    ("decision", "TEXT"),
    ("status", "TEXT"),
    ("error_kind", "TEXT"),
    ("duration_ms", "REAL"),
    ("result_chars", "INTEGER"),
    ("prev_hash", "TEXT NOT NULL"),
    ("hash", "TEXT NOT NULL UNIQUE"),
)
_NAMES = [name for name, _ in COLUMNS]
_INSERT = f"INSERT OR IGNORE INTO calls ({', '.join(_NAMES)}) VALUES ({', '.join('?' * len(_NAMES))})"


class SqliteMirror:
    """A ``calls`` table with one row per audit record (keyed by ``seq``; re-inserting is harmless)."""

    def __init__(self, path: str | Path) -> None:
        import sqlite3

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=10, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")
        # the JSONL file is the durable record; a mirror row lost to a power cut is restored by a sync
        self._db.execute("PRAGMA synchronous=NORMAL")
        columns = ", ".join(f"{name} {kind}" for name, kind in COLUMNS)
        self._db.execute(f"CREATE TABLE IF NOT EXISTS calls ({columns})")
        self._db.execute("CREATE INDEX IF NOT EXISTS calls_tool_time ON calls (tool, time)")

    def insert_many(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Insert records not yet mirrored; returns how many rows were added."""
        rows = [tuple(r.get(name) for name in _NAMES) for r in records]
        with self._lock:
            before = self._db.total_changes
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(_INSERT, rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return self._db.total_changes - before

    def insert(self, record: Mapping[str, Any]) -> None:
        self.insert_many([record])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def sync_sqlite(jsonl: str | Path, database: str | Path) -> int:
    """Mirror every record of an audit file that the database lacks; returns the number added."""
    records = []
    with Path(jsonl).open("rb") as fh:
        for raw in fh:
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("seq"), int) and "hash" in record:
                records.append(record)
    mirror = SqliteMirror(database)
    try:
        return mirror.insert_many(records)
    finally:
        mirror.close()
