"""``hermes kanban dispatch | list``: hand the board's ready tasks to sub-agents, and show the board."""

from __future__ import annotations

import click


@click.group("kanban")
def kanban_group() -> None:
    """The shared kanban board: dispatch ready tasks to sub-agents, list tasks."""


@kanban_group.command("dispatch")
@click.option(
    "-c",
    "--concurrency",
    type=click.IntRange(min=1),
    help="Sub-agents at once ([plugins.agents] max_concurrency).",
)
@click.option("--max-tasks", type=click.IntRange(min=1), help="Claim at most this many tasks.")
@click.option("--wait", is_flag=True, help="Keep waiting for new ready tasks until interrupted.")
@click.option("--toolset", "toolsets", multiple=True, metavar="T", help="The workers' toolsets (repeatable).")
@click.option("-m", "--model", metavar="NAME", help="The workers' model (default: the default model).")
@click.option("--max-turns", type=click.IntRange(min=1), help="Model turns per worker ([plugins.agents]).")
def dispatch_command(
    concurrency: int | None,
    max_tasks: int | None,
    wait: bool,
    toolsets: tuple[str, ...],
    model: str | None,
    max_turns: int | None,
) -> None:
    """Claim ready tasks (dependencies done, no live claim) and run each in a sub-agent; the sub-agent's report
    completes the task, a sub-agent that stops early blocks it with the reason. Prints one line per event.

    \b
    Exit status: 0 when every dispatched task was completed, 1 when one was blocked or lost, 2 configuration error.
    """
    from hermes_core.cli import ConfigFailure, current_system

    from .kanban import BoardError, Dispatcher

    system = current_system()
    dispatcher = Dispatcher(
        system,
        concurrency=concurrency,
        toolsets=list(toolsets) or None,
        model=model,
        max_turns=max_turns,
        on_event=click.echo,
    )
    try:
        report = dispatcher.run(max_tasks=max_tasks, wait=wait)
    except KeyboardInterrupt:
        dispatcher.stop()
        raise click.Abort() from None
    except BoardError as err:
        raise ConfigFailure(str(err)) from None
    click.echo(
        f"dispatched {len(report.order)} task(s): {len(report.completed)} done, {len(report.blocked)} blocked, "
        f"{len(report.lost)} lost",
        err=True,
    )
    if report.blocked or report.lost:
        raise SystemExit(1)


@kanban_group.command("list")
@click.option("--status", default=None, help="A status, or 'all' (default: open tasks).")
def list_command(status: str | None) -> None:
    """The board's tasks, one per line: id, status, priority, title, holder."""
    from hermes_core.cli import current_system

    from .kanban import Board

    board = Board.for_system(current_system())
    for t in board.list_tasks(status):
        click.echo(f"{t['id']}\t{t['status']}\t{t['priority']}\t{t['title']}\t{t['owner'] or ''}")
