"""MCP both ways.

- As a client (``client``): every ``[mcp.servers.NAME]`` server becomes the toolset ``mcp-NAME``, named by
  ``naming``, its results turned into text and attachments by ``results``; its resources and prompts are tools
  too, and reachable from Python (``resources``, ``read_resource``, ``prompts``, ``get_prompt``); what the server
  asks of hermes (elicitation, sampling, roots) goes to the host (``_host``).
- As a server (``server``, ``hermes mcp serve``): the selected tools of a system, every call through the full
  pipeline, each client a session of its own, approvals asked of the client that made the call (``approval``).

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
    ServeSettings,
    parse_spec,
)
from .naming import plan_names, safe_tool_name
from .results import render_result

if TYPE_CHECKING:
    from ..decisions import ToolOutput
    from ..system import ToolSystem
    from .client import McpClients

__all__ = [
    "DEFAULT_MAX_BACKOFF",
    "DEFAULT_MAX_CALL_TIME",
    "DEFAULT_READY_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "MIN_START_TIMEOUT",
    "ClientSettings",
    "ServeSettings",
    "ServerSpec",
    "get_prompt",
    "parse_spec",
    "plan_names",
    "prompts",
    "read_resource",
    "render_result",
    "resources",
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


def _clients(system: ToolSystem) -> McpClients:
    clients: McpClients | None = getattr(system, "_mcp", None)
    if clients is None:
        raise KeyError("no MCP server is configured ([mcp.servers.NAME])")
    return clients


def resources(system: ToolSystem, server: str) -> list[dict[str, Any]]:
    """The resources MCP server ``server`` offers (dicts: ``uri``, ``name``, ``mimeType``, ``description``)."""
    return _clients(system).resources(server)


def read_resource(system: ToolSystem, server: str, uri: str) -> str | ToolOutput:
    """Resource ``uri`` of MCP server ``server``: its text (binary parts as attachments of a ``ToolOutput``)."""
    return _clients(system).read_resource(server, uri)


def prompts(system: ToolSystem, server: str) -> list[dict[str, Any]]:
    """The prompts MCP server ``server`` offers (dicts: ``name``, ``description``, ``arguments``)."""
    return _clients(system).prompts(server)


def get_prompt(
    system: ToolSystem, server: str, name: str, arguments: dict[str, str] | None = None
) -> str | ToolOutput:
    """Prompt ``name`` of MCP server ``server`` filled with ``arguments`` (``[role]`` before each message)."""
    return _clients(system).get_prompt(server, name, arguments)
