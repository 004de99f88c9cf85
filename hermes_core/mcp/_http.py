"""The HTTP side of ``hermes mcp serve``: bearer tokens, session cookies and connection limits.

- ``BearerGuard``: every request must carry ``Authorization: Bearer <token>`` (the scheme in any case); a 401 says
  what was wrong (no header, another scheme, a wrong token).
- ``SessionCookies``: gives each 2026-07-28 client a session of its own through a signed cookie (see
  ``_sessions``).
- ``guarded_protocol``: at most ``max_connections`` open connections (one more is answered 503 and closed), a
  connection that sends no complete request within ``idle_seconds`` is closed, and replies are sent at once
  (``TCP_NODELAY``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import socket
from collections.abc import Awaitable, Callable
from http.cookies import CookieError, SimpleCookie
from typing import Any

from .._log import get_logger
from ._sessions import COOKIE, ClientSessions

__all__ = ["BearerGuard", "SessionCookies", "guarded_protocol"]

log = get_logger("hermes.mcp.server")

ASGIApp = Callable[..., Awaitable[None]]


def _header(scope: dict[str, Any], name: bytes) -> bytes | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value)
    return None


async def _json_response(
    send: Any,
    status: int,
    body: dict[str, Any],
    headers: list[tuple[bytes, bytes]] = (),  # type: ignore[assignment]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


class BearerGuard:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer <token>`` get 401 and go no further."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    def problem(self, header: bytes | None) -> str | None:
        """What is wrong with an ``Authorization`` header, or None when it carries the token."""
        if header is None or not header.strip():
            return "this server needs a bearer token: send the header 'Authorization: Bearer <token>'"
        scheme, _, given = header.strip().partition(b" ")
        if scheme.lower() != b"bearer":
            shown = scheme.decode("latin-1")[:20]
            return f"the Authorization header must be 'Bearer <token>', not the {shown!r} scheme"
        if not hmac.compare_digest(given.strip(), self._token):
            return "the bearer token is wrong (check the token the server was started with)"
        return None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            problem = self.problem(_header(scope, b"authorization"))
            if problem is not None:
                challenge = b'Bearer realm="hermes"'
                if _header(scope, b"authorization"):
                    challenge += b', error="invalid_token"'
                await _json_response(send, 401, {"error": problem}, [(b"www-authenticate", challenge)])
                return
        await self.app(scope, receive, send)


def _principal(scope: dict[str, Any]) -> str:
    """Who the client says it is (a digest of its credential; "" without one): a cookie is bound to it."""
    auth = _header(scope, b"authorization")
    return hashlib.sha256(auth).hexdigest() if auth else ""


def _cookie(scope: dict[str, Any]) -> str | None:
    raw = _header(scope, b"cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw.decode("latin-1"))
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


class SessionCookies:
    """ASGI middleware: a 2026-07-28 request gets its client's session (``scope["state"]["hermes.session"]``).

    The session comes from the request's ``hermes_mcp_session`` cookie when this server minted it for the same
    credential; otherwise a new session is made and its cookie set on the response (``fresh`` is then True).
    """

    def __init__(self, app: ASGIApp, sessions: ClientSessions, modern: frozenset[str]) -> None:
        self.app = app
        self.sessions = sessions
        self.modern = modern

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        version = _header(scope, b"mcp-protocol-version")
        if version is None or version.decode("latin-1") not in self.modern:
            await self.app(scope, receive, send)  # the handshake era: the SDK's session id decides
            return
        principal = _principal(scope)
        cookie = _cookie(scope)
        session_id = self.sessions.verify(cookie, principal) if cookie else None
        state = scope.setdefault("state", {})
        if session_id is not None:
            state["hermes.session"] = (session_id, False)
            await self.app(scope, receive, send)
            return
        if self.sessions.full():
            await _json_response(
                send,
                503,
                {"error": "too many open sessions on this server; retry later"},
                [(b"retry-after", b"5")],
            )
            return
        session_id, value = self.sessions.mint(principal)
        state["hermes.session"] = (session_id, True)
        set_cookie = f"{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict".encode()

        async def send_with_cookie(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), (b"set-cookie", set_cookie)]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"retry-after: 5\r\ncontent-length: 58\r\n\r\n"
    b'{"error": "too many open connections; retry in a moment"}\n'
)


def guarded_protocol(base: type[Any], max_connections: int, idle_seconds: float) -> type[Any]:
    """``base`` (uvicorn's HTTP protocol class) with a connection limit and a timeout for silent connections."""

    class Guarded(base):  # type: ignore[misc,valid-type]
        _silence: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                # small responses must not wait for the client's delayed ACK (40 ms per call otherwise)
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                log.warning(
                    "refusing a connection: %d are open ([mcp.serve] max_connections)", max_connections
                )
                transport.write(_BUSY)
                transport.close()
                return
            self._silence = asyncio.get_running_loop().call_later(
                idle_seconds, self._drop_if_silent, transport
            )

        def _drop_if_silent(self, transport: asyncio.Transport) -> None:
            self._silence = None
            if getattr(self, "cycle", None) is None and not transport.is_closing():
                log.info("closing a connection that sent no request within %g s", idle_seconds)
                transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._silence is not None and getattr(self, "cycle", None) is not None:
                self._silence.cancel()  # a whole request came: uvicorn's keep-alive timeout takes over
                self._silence = None

        def connection_lost(self, exc: Exception | None) -> None:
            if self._silence is not None:
                self._silence.cancel()
                self._silence = None
            super().connection_lost(exc)

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded
