"""``hermes sandbox status``: which sandbox backend runs commands here, why, and what it shows and hides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._output import emit_json
from ._state import get_state

__all__ = ["sandbox_group"]


@click.group("sandbox")
def sandbox_group() -> None:
    """The sandbox commands run in (see the [sandbox] configuration)."""


@sandbox_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print everything as one JSON document.")
def status_command(as_json: bool) -> None:
    """Say which backend runs commands and why, what each backend offers here, and what a command sees.

    Exit status 1 when no backend is usable (commands would be refused).
    """
    from ..sandbox._diagnose import status

    state = get_state()
    workspace = Path(state.workspace).expanduser().resolve() if state.workspace else Path.cwd()
    data = status(state.load_config(), workspace)
    if as_json:
        emit_json(data)
    else:
        _print(data)
    if not data.get("backend"):
        click.get_current_context().exit(1)


def _print(data: dict[str, Any]) -> None:
    if "error" in data:
        click.echo(f"configuration error: {data['error']}")
        return
    click.echo(f"backend: {data['backend'] or 'none usable'} (configured: {data['configured']})")
    click.echo(f"  why: {data['reason']}")
    for name, info in data["backends"].items():
        mark = "available" if info["available"] else "unavailable"
        click.echo(f"  {name:<9} {mark:<12} {info['detail']}")
    limits = data["limits"]
    click.echo(
        f"limits: {'cgroup ' + limits['cgroup'] if limits['cgroup'] else 'rlimits'} ({limits['detail']})"
    )
    if data.get("call_limits"):
        click.echo("per call: " + ", ".join(f"{k} {v}" for k, v in data["call_limits"].items()))
    net = data["network"]
    per_tool = "".join(f", {tool} {mode}" for tool, mode in net["tools"].items())
    click.echo(
        f"network: {net['default']}{per_tool} (on = only hermes's proxy; namespace: {net['namespace']})"
    )
    click.echo(f"  allowed through the proxy: {', '.join(net['allow']) or 'nothing'}")
    click.echo(
        f"  other names: {'ask for approval (headless: refused)' if net['ask_for_others'] else 'refused'}"
    )
    filt = data["filter"]
    click.echo(f"system-call filter: {'on' if filt['available'] else 'UNAVAILABLE'} ({filt['detail']})")
    if data.get("host_run"):
        click.echo("read-only inside (host-run files): " + ", ".join(data["host_run"]))
    env = data["environment"]
    click.echo(
        f"environment: allow-listed host variables + pass_env {env['pass_env'] or '[]'} + set {env['set'] or '[]'}"
    )
    view = data.get("view", {})
    if "refused" in view:
        click.echo(f"view: refused: {view['refused']}")
    elif view:
        click.echo(f"workspace (read-write): {view['workspace']}")
        for key in ("read_write", "read_only", "kept_read_only_inside_workspace", "hidden", "hermes_folders"):
            if view[key]:
                click.echo(f"{key.replace('_', ' ')}: " + ", ".join(view[key]))
    for title in ("guarantees", "limitations"):
        if data[title]:
            click.echo(f"{title}:")
            for line in data[title]:
                click.echo(f"  - {line}")
    for finding in data["findings"]:
        if finding["severity"] != "info":
            click.echo(f"{finding['severity']}: {finding['message']} (fix: {finding['fix']})")
