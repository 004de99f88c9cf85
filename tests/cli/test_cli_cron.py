"""``hermes cron run`` (added by the built-ins' register_commands hook) runs due jobs through the pipeline."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import Run


def test_cron_run_executes_due_jobs(home: Path, run: Run, tmp_path: Path) -> None:
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
    store = home / "data" / "cronjob" / "jobs.json"
    job_id = json.loads(store.read_text())["jobs"][0]["id"]
    assert job_id in run(*ws, "call", "cronjob", '{"action": "list"}').stdout
    assert run(*ws, "cron", "run").stdout == ""  # not due yet: nothing runs
    data = json.loads(store.read_text())
    data["jobs"][0]["next_run"] = 0  # as if the scheduler had been away past the job's slot
    store.write_text(json.dumps(data))
    out = run(*ws, "cron", "run")
    assert out.exit_code == 0, out.output
    fields = out.stdout.strip().split("\t")
    assert fields[0] == job_id and fields[2] == "read_file" and fields[3] == "ok"
    job = json.loads(store.read_text())["jobs"][0]
    assert job["last_status"] == "ok" and "scheduled hello" in job["last_result"]
    assert job["next_run"] > 0 and run(*ws, "cron", "run").stdout == ""  # a missed slot runs once, not again


def test_cron_is_listed_in_help(home: Path, run: Run) -> None:
    assert "cron" in run("--help").stdout
