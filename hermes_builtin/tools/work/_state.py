"""Durable state for the built-in tools: atomic JSON files, file locks and SQLite connections.

Writes go through ``hermes_core.fileio.atomic_write`` (a temporary file, fsynced, renamed over the old one),
so a failed or interrupted write always leaves the previous version intact. Read-modify-write cycles hold an
exclusive ``fcntl.flock`` on a sibling ``.lock`` file, so concurrent processes never lose each other's updates.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import ToolError
from hermes_core.fileio import atomic_write

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "connect_sqlite",
    "file_lock",
    "immediate",
    "read_json",
    "safe_key",
    "update_json",
    "write_json",
]

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def safe_key(value: str, limit: int = 64) -> str:
    """A file-name-safe, collision-free key for ``value`` (a session id, a job id...)."""
    cleaned = _SAFE.sub("_", value)[:limit].strip(".") or "_"
    if cleaned == value:
        return cleaned
    import hashlib

    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{cleaned}-{digest}"


def read_json(path: Path, default: Any) -> Any:
    """The JSON value stored at ``path``, or ``default`` when the file does not exist.

    A corrupt file raises ``ToolError`` and is left untouched, so nothing in it is overwritten.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return default
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ToolError(
            f"the state file {path} is corrupt ({exc}); it was left as is, fix or move it away",
            retryable=False,
        ) from None


def write_json(path: Path, value: Any) -> None:
    """Replace ``path`` with ``value`` as JSON, atomically; state files are private to the user (mode 0600)."""
    atomic_write(path, json.dumps(value, ensure_ascii=False, indent=1) + "\n", mode=0o600)


@contextlib.contextmanager
def file_lock(path: Path, *, blocking: bool = True) -> Iterator[bool]:
    """Hold an exclusive lock on ``path`` (created if needed); yields False when ``blocking`` is off and it is taken."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def update_json(path: Path, default: Any) -> Iterator[list[Any]]:
    """Read-modify-write ``path`` under its lock: yields ``[value]``; the (possibly replaced) value is saved.

    Nothing is written when the block raises.
    """
    with file_lock(path.with_name(path.name + ".lock")):
        box = [read_json(path, default)]
        yield box
        write_json(path, box[0])


def connect_sqlite(path: Path, *, timeout: float = 30.0) -> sqlite3.Connection:
    """A connection in autocommit mode with WAL journaling and a busy timeout, ready for concurrent processes.

    Callers open write transactions with ``BEGIN IMMEDIATE`` so writers queue instead of deadlocking.
    """
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A ``BEGIN IMMEDIATE`` transaction: committed on success, rolled back when the block raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
