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
    "ClientSettings",
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

Approve = Literal["destructive", "all", "none"]
_APPROVE = ("destructive", "all", "none")


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
    transport: Literal["stdio", "http"]
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
    approve: Approve = "destructive"

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
    approve = raw.get("approve", "destructive")
    if approve not in _APPROVE:
        raise ValueError(f"approve must be one of {', '.join(_APPROVE)}, got {approve!r}")
    common: dict[str, Any] = {
        "timeout": _positive(raw, "timeout", DEFAULT_TIMEOUT),
        "prefix": str(raw["prefix"]) if "prefix" in raw else None,
        "max_backoff": _positive(raw, "max_backoff", settings.max_backoff),
        "max_call_time": _positive(raw, "max_call_time", DEFAULT_MAX_CALL_TIME),
        "approve": approve,
    }
    if url:
        return ServerSpec(
            name, "http", url=str(url), headers=_secrets("header", raw.get("headers", {})), **common
        )
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
