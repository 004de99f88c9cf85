"""MCP both ways.

- As a client (``client``): every ``[mcp.servers.NAME]`` server becomes the toolset ``mcp-NAME``, named by
  ``naming``, its results turned into text and attachments by ``results``.
- As a server (``server``, ``hermes mcp serve``): the selected tools of a system, every call through the full
  pipeline, approvals asked of the connected client by elicitation (``approval``).

Importing this package imports neither the MCP SDK nor anything heavy; the SDK loads when a server connects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._spec import (
    DEFAULT_MAX_BACKOFF,
    DEFAULT_MAX_CALL_TIME,
    DEFAULT_READY_TIMEOUT,
    DEFAULT_TIMEOUT,
    MIN_START_TIMEOUT,
    ClientSettings,
    ServerSpec,
    parse_spec,
)
from .naming import plan_names, safe_tool_name
from .results import render_result

if TYPE_CHECKING:
    from ..system import ToolSystem
    from .client import McpClients

__all__ = [
    "DEFAULT_MAX_BACKOFF",
    "DEFAULT_MAX_CALL_TIME",
    "DEFAULT_READY_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "MIN_START_TIMEOUT",
    "ClientSettings",
    "ServerSpec",
    "parse_spec",
    "plan_names",
    "render_result",
    "safe_tool_name",
    "start_servers",
    "status",
    "wait_ready",
]


def start_servers(system: ToolSystem) -> McpClients:
    """Start connecting the system's configured servers in the background (see ``client``); returns at once."""
    from .client import start_servers as start

    return start(system)


def status(system: ToolSystem) -> dict[str, dict[str, Any]]:
    """Per configured server (see ``ToolSystem.mcp_status``)."""
    return system.mcp_status()


def wait_ready(system: ToolSystem, timeout: float = 30.0) -> bool:
    """Block until no server is still connecting (see ``ToolSystem.wait_mcp``)."""
    return system.wait_mcp(timeout)
