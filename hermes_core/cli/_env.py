"""``hermes env status``: where a session's commands and files live, whether it can start and why."""

from __future__ import annotations

from typing import Any

import click

from ._output import emit_json
from ._state import get_state

__all__ = ["env_group"]


@click.group("env")
def env_group() -> None:
    """The environment sessions run in (see the [environment] configuration)."""


@env_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print everything as one JSON document.")
def status_command(as_json: bool) -> None:
    """Say which environment runs commands and files, on what, whether it can start (and why not), what it
    guarantees and what persists between commands.

    Exit status 1 when it cannot start (the tools that need it are hidden).
    """
    from ..environments._diagnose import report

    data = report(get_state().system())
    if as_json:
        emit_json(data)
    else:
        _print(data)
    if not data["ready"]:
        click.get_current_context().exit(1)


def _print(data: dict[str, Any]) -> None:
    state = "ready" if data["ready"] else "cannot start"
    click.echo(f"environment: {data['kind']} ({state})")
    if data["detail"]:
        click.echo(f"  on: {data['detail']}")
    if data["reason"]:
        click.echo(f"  {'why' if data['ready'] else 'reason'}: {data['reason']}")
    if not data["ready"]:
        if data["fix"]:
            click.echo(f"  fix: {data['fix']}")
        click.echo(f"  file tools: {'available' if data['files_ready'] else 'hidden too'}")
    for title in ("guarantees", "limitations", "persists"):
        if data[title]:
            click.echo(f"{'what persists between commands' if title == 'persists' else title}:")
            for line in data[title]:
                click.echo(f"  - {line}")
    click.echo("kinds: " + ", ".join(f"{name} ({where})" for name, where in data["kinds"].items()))
    for error in data["errors"]:
        click.echo(f"warning: {error}")
