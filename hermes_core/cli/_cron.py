"""``hermes cron serve | run | list | runs``: the scheduler as a daemon, one pass, the jobs and their runs.

``hermes chat`` and ``hermes mcp serve`` run the same scheduler in the background (``start_host_scheduler``);
each due slot runs once however many of them are alive.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import click

from ._output import emit_json, emit_table
from ._state import get_state

if TYPE_CHECKING:
    from ..scheduler import Run
    from ..system import ToolSystem

__all__ = ["cron_group", "start_host_scheduler"]


def start_host_scheduler(system: ToolSystem) -> None:
    """Run the scheduler in a long-lived command unless ``[scheduler] in_process = false`` (never fatal)."""
    settings: Any = system.config.data.get("scheduler") or {}
    if isinstance(settings, dict) and settings.get("in_process") is False:
        return
    try:
        system.start_scheduler()
    except Exception as err:  # a broken [scheduler] table must not stop a chat or an MCP server
        print(f"hermes: warning: the scheduler is not running: {err}", file=sys.stderr)


def _run_row(run: Run) -> list[Any]:
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(run.started_at))
    took = f"{run.duration_ms:.0f} ms" if run.duration_ms is not None else "-"
    flat = " ".join(run.output.split())
    return [run.id, run.job_id, started, run.status, took, run.trigger, flat[:200]]


_RUN_HEADERS = ["run", "job", "started (UTC)", "status", "duration", "trigger", "output"]


@click.group("cron")
def cron_group() -> None:
    """Scheduled jobs: run the scheduler, list jobs and their runs."""


@cron_group.command("serve")
@click.option(
    "--tick", type=float, help="Longest sleep between looks at the jobs, in seconds ([scheduler] tick)."
)
def serve_command(tick: float | None) -> None:
    """Run the scheduler until interrupted (SIGINT/SIGTERM); prints one line per finished run.

    Any number of schedulers may run at once (this daemon, `hermes chat`, `hermes mcp serve`): each due slot
    of a job runs once.
    """
    system = get_state().system()
    stop = threading.Event()

    def show(run: Run) -> None:
        click.echo("\t".join(str(c) for c in _run_row(run)))

    options: dict[str, Any] = {"on_run": show}
    if tick is not None:
        options["tick"] = tick
    scheduler = system.start_scheduler(**options)
    signal.signal(signal.SIGTERM, lambda *_a: stop.set())
    print(f"hermes cron: scheduler {scheduler.owner} serving {scheduler.store}", file=sys.stderr, flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    scheduler.stop()


@cron_group.command("run")
@click.option("--job", "job_id", metavar="ID", help="Run this job now, whatever its schedule.")
def run_command(job_id: str | None) -> None:
    """Run the jobs that are due now (one pass), or one job now with --job; prints one line per run."""
    from ..scheduler import Scheduler

    system = get_state().system()
    scheduler = Scheduler(system)
    if job_id is not None:
        try:
            runs = [scheduler.run_now(job_id)]
        except KeyError:
            raise click.ClickException(f"no job {job_id!r} (see `hermes cron list`)") from None
        except RuntimeError as err:
            raise click.ClickException(str(err)) from None
    else:
        runs = scheduler.run_pending()
    for run in runs:
        click.echo("\t".join(str(c) for c in _run_row(run)))


@cron_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the jobs as JSON.")
def list_command(as_json: bool) -> None:
    """The scheduled jobs: id, name, schedule, what they run, state and the last run."""
    from dataclasses import asdict

    from ..scheduler import JobStore

    system = get_state().system()
    store = JobStore.for_system(system)
    jobs = store.list_jobs()
    if as_json:
        emit_json([asdict(j) for j in jobs])
        return
    rows = []
    for job in jobs:
        last = store.history(job.id, 1)
        what = f"agent: {job.prompt}" if job.kind == "agent" else str(job.tool)
        state = "active" if job.enabled else "paused"
        rows.append(
            [
                job.id,
                job.name,
                job.schedule,
                " ".join(what.split())[:80],
                state,
                last[0].status if last else "-",
            ]
        )
    if not rows:
        click.echo(
            "no scheduled jobs (the cronjob tool or [scheduler.jobs.NAME] in the config make them)", err=True
        )
    emit_table(["job", "name", "schedule", "runs", "state", "last"], rows)


@cron_group.command("runs")
@click.argument("job_id", required=False)
@click.option("-n", "--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON (with their whole output).")
def runs_command(job_id: str | None, limit: int, as_json: bool) -> None:
    """The latest runs of JOB_ID (of every job without it): status, start, duration, output."""
    from dataclasses import asdict

    from ..scheduler import JobStore

    system = get_state().system()
    store = JobStore.for_system(system)
    if job_id is not None and store.get(job_id) is None and not store.history(job_id, 1):
        raise click.ClickException(f"no job {job_id!r} (see `hermes cron list`)")
    runs = store.history(job_id, limit)
    if as_json:
        emit_json([asdict(r) for r in runs])
        return
    emit_table(_RUN_HEADERS, [_run_row(r) for r in runs])
