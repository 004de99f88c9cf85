"""``hermes mcp serve | list | restart``: this system as an MCP server, and the configured MCP servers."""

from __future__ import annotations

import secrets
import sys
from typing import TYPE_CHECKING, Any

import click

from ._output import emit_json, emit_table
from ._state import get_state

if TYPE_CHECKING:
    from ..system import ToolSystem

__all__ = ["mcp_group"]

TOKEN_ENV = "HERMES_MCP_TOKEN"


@click.group("mcp")
def mcp_group() -> None:
    """Serve this system's tools over MCP; list and restart the configured MCP servers."""


def _parse_address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise click.BadParameter(f"expected HOST:PORT, got {value!r}", param_hint="'--http'")
    return host or "127.0.0.1", int(port)


@mcp_group.command("serve")
@click.option(
    "--toolset",
    "toolsets",
    multiple=True,
    metavar="T",
    help="Offer this toolset (repeatable; default: the toolsets the configuration enables).",
)
@click.option(
    "--http",
    "address",
    metavar="HOST:PORT",
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (PORT 0: any free port).",
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    help=f"Bearer token HTTP clients must send (or ${TOKEN_ENV}); generated and printed when serving "
    "on a non-loopback address without one.",
)
def serve_command(toolsets: tuple[str, ...], address: str | None, token: str | None) -> None:
    """Serve the selected tools over MCP: every call goes through the full pipeline.

    Approvals (dangerous commands, writes outside the workspace, tools that always ask) are put to the MCP
    client as an elicitation; a client that cannot ask its user gets a denial. Over HTTP the server binds to
    127.0.0.1 by default and needs a bearer token on any other address.
    """
    import anyio

    from ..mcp.approval import ElicitingApprover
    from ..mcp.server import McpServer, is_loopback
    from ._tools import toolset_members

    state = get_state()
    approver = ElicitingApprover()
    state.approver = approver
    system = state.system()
    system.approver = approver  # in case the system was built before this command ran
    for name in toolsets:
        toolset_members(system, name)  # an unknown toolset is a usage error
    server = McpServer(system, list(toolsets) or None)
    from ._cron import start_host_scheduler

    start_host_scheduler(system)  # a long-lived process runs the scheduled jobs ([scheduler] in_process)
    if address is None:
        anyio.run(server.serve_stdio)
        return
    host, port = _parse_address(address)
    if not token and not is_loopback(host):
        token = secrets.token_urlsafe(32)
        print(f"hermes mcp: bearer token for this run: {token}", file=sys.stderr)

    def ready(url: str) -> None:
        auth = " (clients must send Authorization: Bearer <token>)" if token else ""
        print(f"hermes mcp: serving {len(server.tools())} tools at {url}{auth}", file=sys.stderr, flush=True)

    try:
        anyio.run(lambda: server.serve_http(host, port, token=token, on_ready=ready))
    except OSError as err:
        raise click.ClickException(f"cannot listen on {host}:{port}: {err.strerror or err}") from None


def _rows(system: ToolSystem) -> list[dict[str, Any]]:
    return [{"name": name, **info} for name, info in system.mcp_status().items()]


@mcp_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list with every detail.")
def list_command(as_json: bool) -> None:
    """The configured MCP servers: state, transport, tools (registered names) and the last error."""
    system = get_state().system()
    rows = _rows(system)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("no MCP servers are configured ([mcp.servers.NAME] in the configuration file)")
        return
    table = []
    for row in rows:
        notes = [row["error"] or ""]
        notes += [f"{local} hidden: {why}" for local, why in row["hidden"].items()]
        notes += [f"{tool} left out: {why}" for tool, why in row["skipped"].items()]
        notes += [f"{c['tool']} is {c['name']} (clashes with {', '.join(c['with'])})" for c in row["clashes"]]
        tools = ", ".join(row["tools"])
        table.append(
            (row["name"], row["state"], row["transport"] or "", tools, "; ".join(n for n in notes if n))
        )
    emit_table(["server", "state", "transport", "tools", "notes"], table)


@mcp_group.command("restart")
@click.argument("name")
def restart_command(name: str) -> None:
    """Restart MCP server NAME in this process and wait until it is ready (exit 1 if it does not come up).

    A running host restarts its own servers with ``system.mcp_restart(name)``.
    """
    from ..mcp import ClientSettings

    system = get_state().system()
    try:
        started = system.mcp_restart(name)
    except KeyError as err:
        raise click.BadParameter(str(err.args[0]), param_hint="'NAME'") from None
    info = system.mcp_status()[name]
    if not started:
        raise click.ClickException(
            f"MCP server {name!r} is {info['state']}: {info.get('error') or 'not running'}"
        )
    bound = ClientSettings.from_config(system.config).ready_timeout
    system.wait_mcp(bound)
    info = system.mcp_status()[name]
    if info["state"] != "ready":
        raise click.ClickException(
            f"MCP server {name!r} is {info['state']} after {bound:g} s: {info.get('error') or 'no answer yet'}"
        )
    click.echo(f"{name}: ready, {info['tool_count']} tools ({', '.join(info['tools'])})")
