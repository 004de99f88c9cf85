"""The doctor's MCP checks: configured servers that are down or misconfigured, clashing tool names, hidden tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._report import Problem

if TYPE_CHECKING:
    from ..system import ToolSystem

__all__ = ["mcp_problems"]


def mcp_problems(system: ToolSystem) -> list[Problem]:
    """The doctor's MCP section: servers down or misconfigured, clashing names (with the fix), hidden tools."""
    out = []
    for name, info in system.mcp_status().items():
        where = f"mcp:{name}"
        table = f"[mcp.servers.{name}]"
        log_hint = f"; its log is {info['log']}" if info.get("log") else ""
        state = info["state"]
        if state == "failed":
            out.append(
                Problem(
                    "error",
                    where,
                    "mcp",
                    f"MCP server {name!r} is not used: {info.get('error') or 'unknown error'}",
                    f"fix {table} (command/args or url, headers, env){log_hint}",
                )
            )
        elif state == "reconnecting":
            out.append(
                Problem(
                    "error",
                    where,
                    "mcp",
                    f"MCP server {name!r} is down: {info.get('error') or 'unknown error'} "
                    f"({info.get('attempts', 0)} attempts so far; it keeps retrying)",
                    f"check command/args/url in {table}, then `hermes mcp restart {name}` or wait{log_hint}",
                )
            )
        elif state == "connecting":
            out.append(
                Problem(
                    "warning",
                    where,
                    "mcp",
                    f"MCP server {name!r} is still connecting",
                    f"run the doctor again, or raise [mcp] ready_timeout{log_hint}",
                )
            )
        for clash in info.get("clashes") or ():
            out.append(
                Problem(
                    "warning",
                    where,
                    "mcp-names",
                    f"tool {clash['tool']!r} of MCP server {name!r} clashes with {' and '.join(clash['with'])}; "
                    f"it is registered as {clash['name']!r}",
                    f'choose the names with prefix = "..." in {table} (prefix = "" keeps bare names for this '
                    "server; the other server's tool is then qualified)",
                )
            )
        for tool, reason in (info.get("skipped") or {}).items():
            out.append(
                Problem(
                    "warning",
                    where,
                    "mcp-names",
                    f"tool {tool!r} of MCP server {name!r} was left out: {reason}",
                    f'set a prefix no other server uses in {table} (prefix = "{name}_")',
                )
            )
        for tool, reason in (info.get("hidden") or {}).items():
            out.append(Problem("info", where, "mcp", f"tool {tool!r} is hidden: {reason}", "nothing to do"))
    return out
