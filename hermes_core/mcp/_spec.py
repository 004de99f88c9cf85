"""The ``[mcp]`` configuration: client-wide settings and one ``ServerSpec`` per ``[mcp.servers.NAME]`` table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..config import Config, resolve_secret

__all__ = [
    "DEFAULT_MAX_BACKOFF",
    "DEFAULT_MAX_CALL_TIME",
    "DEFAULT_READY_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "FIRST_BACKOFF",
    "MIN_START_TIMEOUT",
    "TRUSTS",
    "ClientSettings",
    "ServeSettings",
    "ServerSpec",
    "parse_spec",
]

DEFAULT_TIMEOUT = 60.0
"""Seconds a server may stay silent during one call (progress notifications restart the clock) or one
re-listing of its tools (the ``timeout`` key overrides)."""

MIN_START_TIMEOUT = 30.0
"""Start-up (spawn, handshake, first listing) gets ``max(timeout, MIN_START_TIMEOUT)``: a short call timeout
must not fail a server that is slow to start (``npx`` fetching a package, say)."""

DEFAULT_MAX_CALL_TIME = 600.0
"""The longest one call may run even while the server keeps reporting progress (``max_call_time``)."""

DEFAULT_MAX_BACKOFF = 30.0
"""The longest wait between two reconnection attempts (``max_backoff``); the first wait is ``FIRST_BACKOFF``."""

DEFAULT_READY_TIMEOUT = 10.0
"""How long a one-shot CLI command waits for servers to connect (``[mcp] ready_timeout``)."""

FIRST_BACKOFF = 0.5

Trust = Literal["annotations", "all", "none"]
TRUSTS: tuple[Trust, ...] = ("annotations", "all", "none")
"""``trust`` of a server: ``annotations`` (its tool annotations decide, with the spec's defaults: a tool without
annotations may destroy, so it asks), ``all`` (no call asks), ``none`` (every call asks)."""
_APPROVE_AS_TRUST: dict[str, Trust] = {"destructive": "annotations", "all": "none", "none": "all"}
Transport = Literal["stdio", "http", "sse"]


def _positive(raw: Mapping[str, Any], key: str, default: float) -> float:
    value = float(raw.get(key, default))
    if value <= 0:
        raise ValueError(f"{key} must be a positive number of seconds")
    return value


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """The ``[mcp]`` table itself: ``ready_timeout`` and the default ``max_backoff``."""

    ready_timeout: float = DEFAULT_READY_TIMEOUT
    max_backoff: float = DEFAULT_MAX_BACKOFF

    @classmethod
    def from_config(cls, config: Config) -> ClientSettings:
        table = config.data.get("mcp") or {}
        try:
            return cls(
                ready_timeout=float(table.get("ready_timeout", DEFAULT_READY_TIMEOUT)),
                max_backoff=_positive(table, "max_backoff", DEFAULT_MAX_BACKOFF),
            )
        except ValueError:
            return cls()


@dataclass(slots=True)
class ServerSpec:
    """One server's connection and naming settings, read from its ``[mcp.servers.NAME]`` table."""

    name: str
    transport: Transport
    timeout: float = DEFAULT_TIMEOUT
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    prefix: str | None = None  # None: bare names, "<server>_" on a clash; a string: always this prefix
    max_backoff: float = DEFAULT_MAX_BACKOFF
    max_call_time: float = DEFAULT_MAX_CALL_TIME
    trust: Trust = "annotations"
    sampling: bool = True
    sampling_model: str | None = None
    roots: bool = True

    @property
    def remote(self) -> bool:
        """Reached over HTTP (streamable or SSE)."""
        return self.transport != "stdio"

    @property
    def start_timeout(self) -> float:
        return max(self.timeout, MIN_START_TIMEOUT)


def _secrets(what: str, table: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, raw in table.items():
        value = resolve_secret(raw)
        if value is None:
            raise ValueError(f"{what} {key!r} points at an unset variable or an unreadable file")
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ValueError(f"{what} {key!r} must be a string, got {type(value).__name__}")
        out[str(key)] = str(value)
    return out


def parse_spec(name: str, raw: Mapping[str, Any], settings: ClientSettings | None = None) -> ServerSpec:
    """Read one ``[mcp.servers.NAME]`` table; raises ``ValueError`` with the reason it cannot be used."""
    settings = settings or ClientSettings()
    command, url = raw.get("command"), raw.get("url")
    if command and url:
        raise ValueError("set either command (a stdio server) or url (an HTTP server), not both")
    common: dict[str, Any] = {
        "timeout": _positive(raw, "timeout", DEFAULT_TIMEOUT),
        "prefix": str(raw["prefix"]) if "prefix" in raw else None,
        "max_backoff": _positive(raw, "max_backoff", settings.max_backoff),
        "max_call_time": _positive(raw, "max_call_time", DEFAULT_MAX_CALL_TIME),
        "trust": _trust(raw),
        "sampling": bool(raw.get("sampling", True)),
        "sampling_model": str(raw["sampling_model"]) if raw.get("sampling_model") else None,
        "roots": bool(raw.get("roots", True)),
    }
    transport = raw.get("transport")
    if transport is not None and transport not in ("stdio", "http", "sse"):
        raise ValueError(f"transport must be stdio, http or sse, got {transport!r}")
    if url:
        if transport == "stdio":
            raise ValueError("transport stdio needs command, not url")
        # an old HTTP+SSE server is usually reached at .../sse; say transport = "sse" for any other path
        sse = str(url).split("?", 1)[0].rstrip("/").endswith("/sse")
        kind: Transport = "sse" if transport == "sse" or (transport is None and sse) else "http"
        return ServerSpec(
            name, kind, url=str(url), headers=_secrets("header", raw.get("headers", {})), **common
        )
    if transport not in (None, "stdio"):
        raise ValueError(f"transport {transport} needs url, not command")
    if command:
        cwd = raw.get("cwd")
        return ServerSpec(
            name,
            "stdio",
            command=str(command),
            args=[str(a) for a in raw.get("args", [])],
            env=_secrets("environment variable", raw.get("env", {})),
            cwd=str(Path(cwd).expanduser()) if cwd else None,
            **common,
        )
    raise ValueError("needs command (a stdio server) or url (an HTTP server)")


def _trust(raw: Mapping[str, Any]) -> Trust:
    trust = raw.get("trust")
    if trust is None:
        approve = raw.get("approve", "destructive")
        if approve not in _APPROVE_AS_TRUST:
            raise ValueError(f"approve must be one of destructive, all, none, got {approve!r}")
        return _APPROVE_AS_TRUST[approve]
    if trust not in TRUSTS:
        raise ValueError(f"trust must be one of {', '.join(TRUSTS)}, got {trust!r}")
    return trust  # type: ignore[no-any-return]


def _count(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"[mcp.serve] {key} must be a whole number of at least 1, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """``[mcp.serve]``: how ``hermes mcp serve`` shares itself among its clients (see ``hermes_core.mcp.server``)."""

    workers: int = 32
    """Threads that run tool calls, for every client together, at most: two compute (more would only contend for
    the GIL), the others start while calls wait behind blocked or long ones, and end when idle."""
    session_concurrency: int = 4
    """Calls one client session runs at once; its further calls wait their turn, others' never wait for them."""
    max_call_seconds: float = 600.0
    """The longest one call may run (whatever the tool's own timeout); then it is cancelled."""
    session_idle_seconds: float = 1800.0
    """A client session with no request for this long is closed: its processes end, its state is released."""
    max_sessions: int = 1000
    """Open client sessions at most over HTTP; a new client beyond that is refused (503) until one ends."""
    max_connections: int = 256
    """Open HTTP connections at most; one more is answered 503 and closed."""
    idle_connection_seconds: float = 10.0
    """An HTTP connection that sends no complete request within this many seconds is closed."""
    skills: bool = True
    """Serve the skills (``skills_list``/``skill_view``) as MCP prompts and resources, read-only."""
    token: str | None = None
    """The bearer token from ``token`` (a string, ``{ env = "VAR" }`` or ``{ file = "path" }``)."""

    @classmethod
    def from_config(cls, config: Config) -> ServeSettings:
        """Read ``[mcp.serve]``; raises ``ValueError`` naming the key that is wrong."""
        table = (config.data.get("mcp") or {}).get("serve") or {}
        token = None
        if "token" in table:
            token = resolve_secret(table["token"])
            if not isinstance(token, str) or not token.strip():
                raise ValueError("[mcp.serve] token points at an unset variable or an unreadable file")
            token = token.strip()
        d = cls()
        return cls(
            workers=_count(table, "workers", d.workers),
            session_concurrency=_count(table, "session_concurrency", d.session_concurrency),
            max_call_seconds=_positive(table, "max_call_seconds", d.max_call_seconds),
            session_idle_seconds=_positive(table, "session_idle_seconds", d.session_idle_seconds),
            max_sessions=_count(table, "max_sessions", d.max_sessions),
            max_connections=_count(table, "max_connections", d.max_connections),
            idle_connection_seconds=_positive(table, "idle_connection_seconds", d.idle_connection_seconds),
            skills=bool(table.get("skills", True)),
            token=token,
        )
