"""The client sessions of ``hermes mcp serve``: which pipeline session a request belongs to, and when it ends.

Every MCP client is a session of the served system (``system.session(id)``): its todo list, background processes,
environment and "session" approvals are its own. Which session a request belongs to:

- stdio: the one client of the process (``mcp:stdio:<random>``), for as long as the server runs;
- streamable HTTP up to 2025-11-25: the transport's ``Mcp-Session-Id`` (``mcp:http:<id>``), which the SDK mints
  and checks; it ends when the client deletes it, when the SDK's idle timeout fires or when the server stops;
- streamable HTTP from 2026-07-28, which has no protocol sessions: an HTTP cookie this server mints
  (``hermes_mcp_session``: a random id and an HMAC of it, bound to the client's credential), which HTTP clients
  keep and send back like any cookie. A request without a valid one starts a new session (a forged or foreign
  cookie gains nothing); a client that keeps no cookies gets a session per request.

A session ends (``close``): its pipeline session is closed (processes killed, environment closed, approvals
forgotten), its change listener, its 2026-07-28 rounds and its concurrency gate are dropped, and nothing of it is
kept. Sessions with no request for ``session_idle_seconds`` are closed by ``sweep``; a 2026-07-28 session that holds
no state after a request is forgotten right away (its cookie still names it if the client comes back).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._log import get_logger

if TYPE_CHECKING:
    from ..system import ToolSystem

__all__ = ["COOKIE", "ClientSessions"]

log = get_logger("hermes.mcp.server")

COOKIE = "hermes_mcp_session"


@dataclass(slots=True)
class _Entry:
    kind: str  # "stdio" | "http" (handshake era, the SDK's session) | "cookie" (2026-07-28)
    last_used: float
    in_flight: int = 0
    listener: Any = None  # the ServerSession proxy to notify of tool list changes (handshake era)
    closed: bool = False


class ClientSessions:
    """The open client sessions of one server (see the module docstring)."""

    def __init__(self, system: ToolSystem, idle_seconds: float, max_sessions: int) -> None:
        self.system = system
        self.idle_seconds = idle_seconds
        self.max_sessions = max_sessions
        self._key = secrets.token_bytes(32)
        self._open: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self.on_close: list[Callable[[str], Any]] = []
        self.keeps: Callable[[str], bool] = lambda session_id: False
        """Whether something else holds state for a session (the server points it at its 2026-07-28 rounds)."""

    # -- which session -----------------------------------------------------------------------------------

    def touch(self, session_id: str, kind: str) -> _Entry:
        now = time.monotonic()
        with self._lock:
            entry = self._open.get(session_id)
            if entry is None or entry.closed:
                entry = self._open[session_id] = _Entry(kind, now)
            else:
                entry.last_used = now
            return entry

    @contextmanager
    def active(self, session_id: str, kind: str) -> Iterator[_Entry]:
        """Mark a request of ``session_id`` in flight for the block (a busy session never idles out)."""
        entry = self.touch(session_id, kind)
        with self._lock:
            entry.in_flight += 1
        try:
            yield entry
        finally:
            with self._lock:
                entry.in_flight -= 1
                entry.last_used = time.monotonic()
            if kind == "cookie":
                self._forget_if_empty(session_id)

    def _forget_if_empty(self, session_id: str) -> None:
        """A 2026-07-28 session with nothing to keep is not kept (its cookie brings it back when needed)."""
        if session_id in self.system.sessions or self.keeps(session_id):
            return
        with self._lock:
            entry = self._open.get(session_id)
            if entry is not None and entry.in_flight == 0 and entry.listener is None:
                del self._open[session_id]

    def listen(self, session_id: str, kind: str, listener: Any) -> None:
        """Notify ``listener`` (a handshake-era connection) when the tool list changes, until the session ends."""
        self.touch(session_id, kind).listener = listener

    def listeners(self) -> list[tuple[str, Any]]:
        with self._lock:
            return [(sid, e.listener) for sid, e in self._open.items() if e.listener is not None]

    def drop_listener(self, session_id: str) -> None:
        with self._lock:
            entry = self._open.get(session_id)
            if entry is not None:
                entry.listener = None

    # -- cookies (2026-07-28) ----------------------------------------------------------------------------

    def _mac(self, ident: str, principal: str) -> str:
        return hmac.new(self._key, f"{ident}\0{principal}".encode(), hashlib.sha256).hexdigest()[:32]

    def mint(self, principal: str) -> tuple[str, str]:
        """A new session: its id and the cookie value that names it for this credential."""
        ident = secrets.token_urlsafe(16)
        return f"mcp:http:{ident}", f"{ident}.{self._mac(ident, principal)}"

    def verify(self, cookie: str, principal: str) -> str | None:
        """The session a cookie names, when this server minted it for this credential; None otherwise."""
        ident, _, mac = cookie.partition(".")
        if (
            not ident
            or len(ident) > 64
            or not hmac.compare_digest(mac.encode(), self._mac(ident, principal).encode())
        ):
            return None
        return f"mcp:http:{ident}"

    def full(self) -> bool:
        """No room for another HTTP session (``max_sessions``)."""
        with self._lock:
            return sum(1 for e in self._open.values() if e.kind == "cookie") >= self.max_sessions

    # -- ending ------------------------------------------------------------------------------------------

    def close(self, session_id: str) -> bool:
        """End a session now (see the module docstring); False when it was not open."""
        with self._lock:
            entry = self._open.pop(session_id, None)
            if entry is not None:
                entry.closed = True
        try:
            self.system.close_session(session_id)
        except Exception:
            log.exception("closing MCP session %s failed", session_id)
        for callback in self.on_close:
            try:
                callback(session_id)
            except Exception:
                log.exception("cleaning up after MCP session %s failed", session_id)
        if entry is not None:
            log.debug("MCP session %s closed", session_id)
        return entry is not None

    def sweep(self) -> list[str]:
        """Close the sessions idle for ``idle_seconds`` (none of their requests in flight); returns their ids."""
        cutoff = time.monotonic() - self.idle_seconds
        with self._lock:
            idle = [
                sid
                for sid, e in self._open.items()
                if e.kind != "stdio" and e.in_flight == 0 and e.last_used < cutoff
            ]
        for sid in idle:
            self.close(sid)
        return idle

    def close_all(self) -> None:
        for sid in list(self._open):
            self.close(sid)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._open

    def __len__(self) -> int:
        return len(self._open)
