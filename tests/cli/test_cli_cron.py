"""``hermes cron run | list | runs``: one scheduler pass from the command line, the jobs and their runs."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import Run

from hermes_core import ToolSystem
from hermes_core.scheduler import JobStore


def test_cron_run_executes_due_jobs_and_records_them(home: Path, run: Run, tmp_path: Path) -> None:
    workspace = tmp_path / "project"  # outside HERMES_HOME, whose own files the path guard refuses
    workspace.mkdir()
    (workspace / "note.txt").write_text("scheduled hello\n")
    ws = ("--workspace", str(workspace))
    created = run(
        *ws,
        "call",
        "cronjob",
        json.dumps(
            {
                "action": "create",
                "name": "read the note",
                "schedule": "every:1h",
                "tool": "read_file",
                "arguments": {"path": "note.txt"},
            }
        ),
    )
    assert created.exit_code == 0, created.output
    with ToolSystem.load(plugins_dir=False) as system:
        store = JobStore.for_system(system)
    (job,) = store.list_jobs()
    assert job.id in run(*ws, "call", "cronjob", '{"action": "list"}').stdout
    assert run(*ws, "cron", "run").stdout == ""  # not due yet: nothing runs
    job.anchor -= 5 * 3600  # as if the scheduler had been away for five slots
    store.save(job)
    out = run(*ws, "cron", "run")
    assert out.exit_code == 0, out.output
    fields = out.stdout.strip().split("\t")
    assert fields[1] == job.id and fields[3] == "ok" and fields[5] == "schedule"
    assert run(*ws, "cron", "run").stdout == ""  # the missed slots ran once, not again
    (done,) = store.history(job.id)
    assert done.status == "ok" and "scheduled hello" in done.output and done.missed == 4
    shown = run("cron", "runs", job.id, "--json")
    assert json.loads(shown.stdout)[0]["status"] == "ok"
    now = run("cron", "run", "--job", job.id)
    assert now.stdout.split("\t")[5] == "manual"
    assert "no job 'nope'" in run("cron", "runs", "nope").output


def test_cron_is_listed_in_help(home: Path, run: Run) -> None:
    out = run("cron", "--help").stdout
    assert all(word in out for word in ("serve", "run", "list", "runs"))
