"""The built-ins' CLI commands: ``hermes kanban dispatch | show`` (the task board and its dispatcher).

``hermes cron ...`` belongs to the core (``hermes_core.cli``), like the scheduler it drives.
"""

from __future__ import annotations

import click


def add_commands(cli: click.Group) -> None:
    from .kanban_cli import kanban_group

    cli.add_command(kanban_group)
