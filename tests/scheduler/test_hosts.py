"""The scheduler inside long-lived hosts: `hermes cron serve` and `hermes mcp serve` alive at once run a due slot
once; a ToolSystem runs jobs only when it opts in, and one that does not pays nothing for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from hermes_core.cli import cli
from hermes_core.scheduler import Job, JobStore

HERMES = [sys.executable, "-m", "hermes_core.cli"]


def _job(workspace: Path, log: Path, anchor: int) -> Job:
    return Job(
        id="tick",
        name="tick",
        schedule="every:1m",
        tool="terminal",
        arguments={"command": f"echo tick >> {log.name}"},
        workspace=str(workspace),
        created_at=time.time(),
        anchor=anchor,
    )


def test_cron_serve_and_mcp_serve_alive_together_run_a_due_slot_once(
    make_system: Any, workspace: Path
) -> None:
    log = workspace / "ticks.txt"
    system = make_system()
    store = JobStore.for_system(system)
    slot = int(time.time()) + 8  # after both processes are up
    store.add(_job(workspace, log, slot - 60))
    env = {**os.environ, "HERMES_LOAD_PLUGINS": "builtin"}
    serve = subprocess.Popen(
        [*HERMES, "cron", "serve", "--tick", "0.5"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    mcp = subprocess.Popen(
        [*HERMES, "mcp", "serve"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while time.time() < slot + 6 and not (log.exists() and store.history("tick")[0].status != "running"):
            time.sleep(0.2)
        time.sleep(1.0)  # a second runner would have started by now
        assert serve.poll() is None and mcp.poll() is None, (serve.stderr, mcp.stderr)
    finally:
        for proc in (serve, mcp):
            proc.terminate()
        outs = [proc.communicate(timeout=30) for proc in (serve, mcp)]
    assert log.read_text() == "tick\n", outs
    (run,) = store.history("tick")
    assert run.slot == slot and run.status == "ok"
    runs = CliRunner().invoke(cli, ["cron", "runs", "tick"], catch_exceptions=False)
    assert runs.exit_code == 0 and runs.stdout.split("\t")[3] == "ok"
    listed = CliRunner().invoke(cli, ["cron", "list", "--json"], catch_exceptions=False)
    assert [j["id"] for j in json.loads(listed.stdout)] == ["tick"]


def test_a_tool_system_runs_jobs_only_when_it_opts_in(make_system: Any, workspace: Path) -> None:
    log = workspace / "ticks.txt"
    plain = make_system()
    assert plain.scheduler is None
    JobStore.for_system(plain).add(_job(workspace, log, int(time.time()) - 59))  # due in a second
    opted = make_system(scheduler=True)
    assert opted.scheduler is not None and opted.scheduler.running
    deadline = time.time() + 10
    while not log.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert log.read_text() == "tick\n"
    opted.close()
    assert not opted.scheduler.running


def test_a_tool_system_that_does_not_opt_in_imports_nothing_of_the_scheduler(tmp_path: Path) -> None:
    code = (
        "import sys, hermes_builtin.plugin\n"
        "from hermes_core import ToolSystem\n"
        "s = ToolSystem.load(load_entry_points=False, plugins=[hermes_builtin.plugin], plugins_dir=False)\n"
        "s.definitions(); s.call('todo', {'action': 'list'})\n"
        "import threading\n"
        "print(sorted(m for m in sys.modules if m.startswith(('sqlalchemy', 'hermes_core.scheduler'))), "
        "[t.name for t in threading.enumerate() if 'scheduler' in t.name])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[] []"


def test_config_jobs_are_synced_into_the_store(make_system: Any, workspace: Path) -> None:
    config = {
        "scheduler": {
            "jobs": {
                "digest": {
                    "schedule": "cron:0 7 * * *",
                    "prompt": "Summarise.",
                    "deliver": "file:d/{date}.md",
                },
                "bad": {"schedule": "every:5s", "tool": "todo"},
            }
        }
    }
    system = make_system(config=config)
    from hermes_core.scheduler import config_jobs

    try:
        config_jobs(system)
    except ValueError as err:
        assert "[scheduler.jobs.bad]" in str(err) and "between 1 minute" in str(err)
    else:
        raise AssertionError("a bad config job was accepted")
    del config["scheduler"]["jobs"]["bad"]
    system = make_system(config=config)
    from hermes_core.scheduler import sync_config_jobs

    store = JobStore.for_system(system)
    sync_config_jobs(system, store)
    (job,) = store.list_jobs()
    assert (job.id, job.kind, job.deliver, job.source) == (
        "config-digest",
        "agent",
        ["file:d/{date}.md"],
        "config",
    )
    refused = system.call("cronjob", {"action": "remove", "job_id": "config-digest"})
    assert "comes from the config file" in refused
