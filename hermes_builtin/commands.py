"""The built-ins' CLI commands: ``hermes cron run [--loop]`` executes due scheduled jobs through the pipeline."""

from __future__ import annotations

import threading

import click


def add_commands(cli: click.Group) -> None:
    @cli.group("cron")
    def cron() -> None:
        """Scheduled jobs of the cronjob tool."""

    @cron.command("run")
    @click.option("--loop", is_flag=True, help="Keep running due jobs until interrupted.")
    @click.option(
        "--interval", default=30.0, show_default=True, type=float, help="Seconds between checks with --loop."
    )
    def run(loop: bool, interval: float) -> None:
        """Run the jobs that are due (once, or in a loop with --loop). Prints one line per run."""
        from hermes_core.cli import current_system

        from .tools.work.cronjob import JobRun, run_due_jobs, run_loop

        system = current_system()

        def show(job: JobRun) -> None:
            click.echo(f"{job.job_id}\t{job.name}\t{job.tool}\t{job.status}\t{job.duration_ms:.0f}ms")

        if not loop:
            for job in run_due_jobs(system):
                show(job)
            return
        stop = threading.Event()
        try:
            run_loop(system, interval, stop, on_run=show)
        except KeyboardInterrupt:
            stop.set()
