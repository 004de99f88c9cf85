"""``hermes mcp serve | list | restart``: this system as an MCP server, and the configured MCP servers."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._output import emit_json, emit_table
from ._state import get_state

if TYPE_CHECKING:
    from ..mcp._spec import ServeSettings
    from ..system import ToolSystem
    from ._state import State

__all__ = ["mcp_group"]

TOKEN_ENV = "HERMES_MCP_TOKEN"


def _warn(message: str) -> None:
    print(f"hermes: warning: {message}", file=sys.stderr)


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
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Read the bearer token HTTP clients must send from this file (recommended).",
)
@click.option(
    "--token",
    help=f"The bearer token HTTP clients must send. Prefer ${TOKEN_ENV}, --token-file or [mcp.serve] token: a "
    "token on the command line is visible to every user of this machine.",
)
def serve_command(
    toolsets: tuple[str, ...], address: str | None, token_file: Path | None, token: str | None
) -> None:
    """Serve the selected tools over MCP: every call goes through the full pipeline.

    Each client is a session of its own (state, processes, approvals). Approvals (dangerous commands, writes
    outside the workspace, tools that always ask) are put to the MCP client that made the call as an
    elicitation; a client that cannot ask its user gets a denial. A call the client cancels is stopped (its
    commands are killed). Over HTTP the server binds to 127.0.0.1 by default and needs a bearer token on any other
    address: from --token-file, ${TOKEN_ENV}, [mcp.serve] token or, last, --token; without one on another address
    a token is generated and printed.
    """
    wire: tuple[int, int] | None = None
    if address is None:
        from ..mcp._lifecycle import divert_stdio

        wire = divert_stdio()  # before any plugin loads: a print() must never reach the protocol stream
    problem = _sdk_problem()
    if problem:
        raise click.ClickException(problem)
    from ..mcp._lifecycle import marked_serving, serving_itself
    from ..mcp._spec import ServeSettings

    state = get_state()
    config_path = state.config_path()
    if serving_itself(config_path):
        raise click.ClickException(
            f"refusing to serve: this `hermes mcp serve` was started by a `hermes mcp serve` of the same "
            f"configuration ({config_path}), which lists itself in [mcp.servers]; remove that entry"
        )
    try:
        settings = ServeSettings.from_config(state.load_config())
    except ValueError as err:
        raise click.ClickException(f"{config_path}: {err}") from None
    token = _token(token_file, token, settings.token)
    with marked_serving(config_path):
        _serve(state, toolsets, address, token, settings, wire)


def _serve(
    state: State,
    toolsets: tuple[str, ...],
    address: str | None,
    token: str | None,
    settings: ServeSettings,
    wire: tuple[int, int] | None,
) -> None:
    from ..mcp.server import McpServer, is_loopback
    from ._tools import toolset_members

    system = state.system()
    for name in toolsets:
        toolset_members(system, name)  # an unknown toolset is a usage error
    server = McpServer(system, list(toolsets) or None, settings=settings)
    from ._cron import start_host_scheduler

    start_host_scheduler(system)  # a long-lived process runs the scheduled jobs ([scheduler] in_process)
    try:
        if wire is not None:
            _serve_stdio(server, wire)
            return
        host, port = _parse_address(address or "")
        if not token and not is_loopback(host):
            token = secrets.token_urlsafe(32)
            print(f"hermes mcp: bearer token for this run: {token}", file=sys.stderr)

        def ready(url: str) -> None:
            auth = " (clients must send Authorization: Bearer <token>)" if token else ""
            print(
                f"hermes mcp: serving {len(server.tools())} tools at {url}{auth}", file=sys.stderr, flush=True
            )

        _serve_http(server, host, port, token, ready)
    finally:
        _shut_down(system)


def _sdk_problem() -> str | None:
    import importlib.util

    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("uvicorn") is None:
        return "hermes mcp serve needs the MCP SDK: pip install 'hermes-tools[mcp]'"
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mcp")
    except PackageNotFoundError:
        return None
    major = found.split(".")[0]
    if not major.isdigit() or int(major) < 2:
        return f"hermes mcp serve needs mcp>=2 (found {found}): pip install 'hermes-tools[mcp]'"
    return None


def _token(token_file: Path | None, flag: str | None, configured: str | None) -> str | None:
    """The bearer token: --token-file, then --token, then $HERMES_MCP_TOKEN, then [mcp.serve] token."""
    if token_file is not None:
        try:
            text = token_file.expanduser().read_text("utf-8").strip()
        except OSError as err:
            raise click.BadParameter(
                f"cannot read {token_file}: {err.strerror or err}", param_hint="'--token-file'"
            ) from None
        if not text:
            raise click.BadParameter(f"{token_file} is empty", param_hint="'--token-file'")
        return text
    if flag:
        _warn(
            f"a token given with --token is visible to other users of this machine; prefer ${TOKEN_ENV} or --token-file"
        )
        return flag
    from_env = os.environ.get(TOKEN_ENV, "").strip()
    return from_env or configured


def _serve_stdio(server: Any, wire: tuple[int, int]) -> None:
    import io
    import signal

    import anyio

    stdin = anyio.wrap_file(
        io.TextIOWrapper(os.fdopen(wire[0], "rb", buffering=0), encoding="utf-8", errors="replace")
    )
    stdout = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire[1], "wb"), encoding="utf-8"))

    async def main() -> None:
        async with anyio.create_task_group() as group:

            async def on_signals() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        group.cancel_scope.cancel()
                        return

            group.start_soon(on_signals)
            await server.serve_stdio(stdin, stdout)
            group.cancel_scope.cancel()

    try:
        anyio.run(main)
    except (KeyboardInterrupt, BrokenPipeError):
        pass


def _serve_http(server: Any, host: str, port: int, token: str | None, ready: Any) -> None:
    import signal

    import anyio

    def stop(signum: int, frame: Any) -> None:  # after uvicorn's own graceful stop, it signals again
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        anyio.run(lambda: server.serve_http(host, port, token=token, on_ready=ready))
    except OSError as err:
        raise click.ClickException(f"cannot listen on {host}:{port}: {err.strerror or err}") from None


def _shut_down(system: ToolSystem) -> None:
    """Close the system (its MCP servers and sandboxes), then end any child process still running."""
    from ..mcp._lifecycle import end_children

    try:
        system.close()
    finally:
        left = end_children()
        if left:
            _warn(f"ended {len(left)} child processes that were still running")


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
