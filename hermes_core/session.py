"""Sessions: the state of one conversation (the system's own, an agent run, one MCP client connection).

Tools keep what belongs to one conversation (background processes, an environment's shell state, the tools a
search loaded, a browser page) in ``context.session.stash(key, factory)``; it is cleaned up when that session
closes (``Sessions.close(id)``: an MCP client disconnects or idles out, an agent run ends) or with the system.
Nothing is shared between sessions unless a tool shares it on purpose (a store on disk, the system's stash).

A session also carries notifications for whoever drives it (``notify``): a background process that finished
or printed a watched line. The agent loop (or a chat UI, or an MCP server) takes them with ``notifications()``
between turns, or waits for one with ``wait_notification``.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ._log import get_logger
from .stash import Stash

__all__ = ["Session", "Sessions"]

T = TypeVar("T")
log = get_logger("hermes")


class Session:
    """One conversation's state: ``stash`` values and ``on_close`` callbacks, released by ``close()``."""

    __slots__ = ("_closers", "_noted", "_notes", "_stash", "id", "last_used")

    def __init__(self, session_id: str) -> None:
        self.id = session_id
        self.last_used = time.monotonic()
        self._stash = Stash()
        self._closers = itertools.count()
        self._notes: list[str] = []
        self._noted = threading.Condition()

    def notify(self, message: str) -> None:
        """Queue ``message`` for whoever drives this session (it wakes ``wait_notification``)."""
        with self._noted:
            self._notes.append(message)
            self._noted.notify_all()

    def notifications(self) -> list[str]:
        """Take the queued notifications, oldest first (each is returned once)."""
        with self._noted:
            taken, self._notes = self._notes, []
        return taken

    def wait_notification(self, timeout: float | None = None) -> bool:
        """Wait until a notification is queued (or ``timeout`` seconds pass); True when one is waiting."""
        with self._noted:
            return self._noted.wait_for(lambda: bool(self._notes), timeout)

    def stash(self, key: str, factory: Callable[[], T], cleanup: Callable[[T], Any] | None = None) -> T:
        """This session's value under ``key``, made by ``factory()`` on first use and cleaned up with the session
        (``cleanup(value)``, else the value's own ``close()``)."""
        return self._stash.get(key, factory, cleanup)

    def peek(self, key: str) -> Any:
        """The value under ``key`` or None, without making it."""
        return self._stash.peek(key)

    def unstash(self, key: str) -> Any:
        """Drop ``key`` now, running its cleanup."""
        return self._stash.pop(key)

    def on_close(self, callback: Callable[[], Any]) -> None:
        """Run ``callback`` when the session closes."""
        self._stash.get(f"on_close#{next(self._closers)}", lambda: callback, lambda cb: cb())

    @property
    def closed(self) -> bool:
        return self._stash.closed

    def touch(self) -> None:
        """Mark the session as used now (idle time-outs count from here)."""
        self.last_used = time.monotonic()

    def close(self) -> None:
        """Release everything the session holds, newest first; further ``stash`` calls raise."""
        self._stash.close()

    def __repr__(self) -> str:
        return f"<Session {self.id!r}{' closed' if self.closed else ''}>"


class Sessions:
    """The open sessions of one tool system, by id; ``get`` opens one on first use."""

    def __init__(self) -> None:
        self._open: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._closed = False

    def get(self, session_id: str) -> Session:
        """The open session ``session_id`` (opened now if it is not open)."""
        found = self._open.get(session_id)
        if found is not None:
            found.last_used = time.monotonic()
            return found
        with self._lock:
            found = self._open.get(session_id)
            if found is None:
                if self._closed:
                    raise RuntimeError("this tool system is closed")
                found = self._open[session_id] = Session(session_id)
            return found

    def peek(self, session_id: str) -> Session | None:
        """The open session ``session_id`` or None, without opening it."""
        return self._open.get(session_id)

    def close(self, session_id: str) -> bool:
        """Close session ``session_id`` and forget it; False when it was not open."""
        with self._lock:
            session = self._open.pop(session_id, None)
        if session is None:
            return False
        session.close()
        return True

    def close_idle(self, idle_seconds: float) -> list[str]:
        """Close every session unused for ``idle_seconds``; returns their ids."""
        cutoff = time.monotonic() - idle_seconds
        idle = [s.id for s in list(self._open.values()) if s.last_used < cutoff]
        return [sid for sid in idle if self.close(sid)]

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._open

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._open))

    def __len__(self) -> int:
        return len(self._open)

    def close_all(self) -> None:
        """Close every session (when the system closes); ``get`` raises afterwards."""
        with self._lock:
            self._closed = True
            sessions = list(self._open.values())
            self._open.clear()
        for session in reversed(sessions):
            try:
                session.close()
            except Exception:
                log.exception("closing session %r failed", session.id)
