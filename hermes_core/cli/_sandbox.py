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
    click.echo("network: " + ", ".join(f"{k} {v}" for k, v in data["network"].items()))
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
