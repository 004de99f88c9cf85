"""Whether this Python's SQLite has FTS5: ``session_search``'s check, kept apart from ``sessions`` so that sizing
the first definitions does not import the session store to ask it."""

from __future__ import annotations

__all__ = ["fts5_available"]

_fts5: bool | None = None


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 (checked once per process)."""
    global _fts5
    if _fts5 is None:
        try:  # the C module alone: the check needs no adapters, and sqlite3's import pulls in datetime
            import _sqlite3 as sqlite3
        except ImportError:
            import sqlite3  # type: ignore[no-redef]

        try:
            conn = sqlite3.connect(":memory:")
            try:
                conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
                _fts5 = True
            finally:
                conn.close()
        except sqlite3.Error:
            _fts5 = False
    return _fts5
