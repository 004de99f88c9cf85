"""Session recording and full-text search (SQLite FTS5): the public API hosts use to feed ``session_search``.

```python
from hermes_builtin.sessions import SessionStore
store = SessionStore(system.data_dir)          # the database lives in <data dir>/session_search/
store.record("chat-42", "user", "how do I rotate the API keys?")
hits = store.search("rotate keys", limit=5)     # -> [SearchHit(session_id, role, timestamp, snippet)]
store.close()
```

The query language is deliberately small and can never raise an SQLite syntax error: words are matched as
quoted terms (all must occur), ``"a phrase"`` matches a phrase, ``word*`` a prefix and ``OR`` between two
terms makes either one enough. Anything else is treated as plain text.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ._fts5 import fts5_available

if TYPE_CHECKING:
    import sqlite3

    from hermes_core import ToolSystem

__all__ = [
    "QueryError",
    "SearchHit",
    "SessionStore",
    "build_match_query",
    "fts5_available",
    "message_text",
    "record_agent_message",
]

DB_RELATIVE = Path("session_search") / "sessions.db"
MAX_MESSAGE_CHARS = 100_000
_TOKEN = re.compile(r'"([^"]*)"?|(\S+)')
_WORD = re.compile(r"\w", re.UNICODE)


class QueryError(ValueError):
    """The search query has nothing searchable in it."""


class SearchHit(NamedTuple):
    """One matching message: its session, role, UNIX time and a snippet with the matches in ``[...]``."""

    session_id: str
    role: str
    timestamp: float
    snippet: str


def _quote(term: str) -> str:
    return '"' + term.replace('"', " ").replace("\x00", " ") + '"'


def build_match_query(query: str) -> str:
    """Turn free text into a safe FTS5 MATCH expression (see the module docstring); raises ``QueryError``."""
    parts: list[str] = []
    pending_or = False
    for phrase, word in _TOKEN.findall(query):
        if word == "OR":
            pending_or = bool(parts)
            continue
        if word:
            prefix = word.endswith("*")
            text = word.rstrip("*")
            if not _WORD.search(text):
                continue
            term = _quote(text) + ("*" if prefix else "")
        else:
            if not _WORD.search(phrase):
                continue
            term = _quote(" ".join(phrase.split()))
        if pending_or:
            parts[-1] = f"{parts[-1]} OR {term}"
        else:
            parts.append(term)
        pending_or = False
    if not parts:
        raise QueryError("the query has no words to search for")
    return " AND ".join(f"({p})" if " OR " in p else p for p in parts)


class SessionStore:
    """Messages of past sessions in ``<data_dir>/session_search/sessions.db``; safe across threads and processes."""

    def __init__(self, data_dir: str | Path) -> None:
        self.path = Path(data_dir) / DB_RELATIVE
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            from .tools.work._state import connect_sqlite, immediate

            conn = connect_sqlite(self.path)
            with immediate(conn):
                conn.execute(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS messages USING fts5("
                    "content, session_id UNINDEXED, role UNINDEXED, ts UNINDEXED, tokenize='porter unicode61')"
                )
            self._conn = conn
        return self._conn

    def record(self, session_id: str, role: str, content: str, timestamp: float | None = None) -> int:
        """Store one message (content beyond 100,000 chars is cut) and return its row id."""
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        if not isinstance(content, str):
            raise TypeError("content must be a string")
        ts = float(time.time() if timestamp is None else timestamp)
        with self._lock:
            cur = self._db().execute(
                "INSERT INTO messages (content, session_id, role, ts) VALUES (?, ?, ?, ?)",
                (content[:MAX_MESSAGE_CHARS], session_id, str(role), ts),
            )
            return int(cur.lastrowid or 0)

    def search(
        self, query: str, limit: int = 10, *, session_id: str | None = None, role: str | None = None
    ) -> list[SearchHit]:
        """The best matches for ``query`` (best first), optionally within one session or role.

        Raises ``QueryError`` when the query has nothing searchable.
        """
        match = build_match_query(query)
        limit = max(1, min(int(limit), 100))
        sql = (
            "SELECT session_id, role, ts, snippet(messages, 0, '[', ']', ' … ', 24) FROM messages "
            "WHERE messages MATCH ?"
        )
        params: list[object] = [match]
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        if role is not None:
            sql += " AND role = ?"
            params.append(role)
        sql += " ORDER BY rank LIMIT ?"
        params.append(limit)
        with self._lock:
            rows = self._db().execute(sql, params).fetchall()
        return [SearchHit(str(s), str(r), float(t), str(snip)) for s, r, t, snip in rows]

    def count(self) -> int:
        """How many messages are stored."""
        with self._lock:
            row = self._db().execute("SELECT count(*) FROM messages").fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def message_text(message: dict[str, Any]) -> str:
    """The searchable text of one agent message: its content, plus the tool calls an assistant asked for."""
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    parts = [content] if isinstance(content, str) and content.strip() else []
    if message.get("role") == "tool" and message.get("name") and parts:
        parts[0] = f"[{message['name']}] {parts[0]}"
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            parts.append(f"called {fn.get('name', '?')} {str(fn.get('arguments', ''))[:2_000]}")
    return "\n".join(parts)


def record_agent_message(system: ToolSystem, session_id: str, message: dict[str, Any]) -> None:
    """Store one message of an agent conversation (the built-ins' ``on_agent_message``); skips empty ones.

    The store stays open for the life of the system (one SQLite connection, closed with it); it is only made
    when FTS5 is there, since ``session_search`` cannot run without it.
    """
    if not fts5_available():
        return
    text = message_text(message)
    if not text:
        return
    store = system.stash("sessions.store", lambda: SessionStore(system.data_dir))
    store.record(session_id, str(message.get("role", "?")), text)
