"""``cronjob`` through ``ToolSystem.call`` and the scheduler functions ``run_due_jobs`` / ``run_loop``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_builtin.tools.work.cronjob import JobRun, next_run_after, parse_schedule, run_due_jobs, run_loop
from hermes_core import ToolError, ToolRegistry, ToolSystem, hookimpl
from hermes_core.testing import unguarded

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


def _append(path: str, text: str, delay: float = 0.0) -> str:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text + "\n")
    time.sleep(delay)
    return f"appended {text}"


_APPEND_SCHEMA = {
    "name": "append_line",
    "description": "Append a line to a file.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "text": {"type": "string"}, "delay": {"type": "number"}},
        "required": ["path", "text"],
    },
}


class _AppendLine:
    """A plugin adding the test tool ``append_line`` (toolset "testing") for jobs to call."""

    @hookimpl
    def register_tools(self, registry: ToolRegistry) -> None:
        registry.register(name="append_line", toolset="testing", schema=_APPEND_SCHEMA, handler=_append)


@pytest.fixture
def system(make_builtin_system: Callable[..., ToolSystem]) -> ToolSystem:
    """The built-ins plus ``append_line``."""
    return make_builtin_system(_AppendLine())


def _ok(system: ToolSystem, args: dict[str, Any]) -> str:
    outcome = system.call_outcome("cronjob", args)
    assert outcome.ok, outcome.result
    return outcome.result


def _err(system: ToolSystem, args: dict[str, Any]) -> str:
    outcome = system.call_outcome("cronjob", args)
    assert outcome.status == "error", outcome.result
    return outcome.result


def _create(
    system: ToolSystem, log: Path, schedule: str = "every:10m", text: str = "tick", delay: float = 0
) -> str:
    args = {"path": str(log), "text": text, "delay": delay}
    out = _ok(
        system,
        {"action": "create", "name": text, "schedule": schedule, "tool": "append_line", "arguments": args},
    )
    return out.split()[2]


def _jobs(system: ToolSystem) -> list[dict[str, Any]]:
    return json.loads((system.data_dir / "cronjob" / "jobs.json").read_text(encoding="utf-8"))["jobs"]


def _set_next_run(system: ToolSystem, job_id: str, when: float) -> None:
    path = system.data_dir / "cronjob" / "jobs.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for job in data["jobs"]:
        if job["id"] == job_id:
            job["next_run"] = when
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("every:15m", "every:15m"),
        ("every: 2 h", "every:2h"),
        ("cron:*/5 * * * *", "cron:*/5 * * * *"),
        ("0 9 * * 1-5", "cron:0 9 * * 1-5"),
        ("cron:@daily", "cron:@daily"),
    ],
)
def test_schedules_are_normalized(raw: str, normal: str) -> None:
    assert parse_schedule(raw) == normal


@pytest.mark.parametrize(
    "raw",
    [
        "every:30s",
        "every:0m",
        "every:400d",
        "every 5 minutes",
        "cron:61 * * * *",
        "* * * *",
        "0 0 0 * * * *",
        "tomorrow",
    ],
)
def test_bad_schedules_are_refused(raw: str) -> None:
    with pytest.raises(ToolError):
        parse_schedule(raw)


def test_next_run_for_intervals_and_cron_in_utc() -> None:
    assert next_run_after("every:90m", T0) == T0 + 5400
    # 2023-11-14 22:13:20 UTC is a Tuesday: the next weekday 09:00 UTC is Wednesday 2023-11-15 09:00
    assert next_run_after("cron:0 9 * * 1-5", T0) == 1_700_038_800.0
    assert next_run_after("cron:0 9 * * 1-5", 1_700_038_800.0) == 1_700_038_800.0 + 86_400


def test_create_list_update_pause_resume_remove(system: ToolSystem, tmp_path: Path) -> None:
    job_id = _create(system, tmp_path / "log.txt")
    listing = _ok(system, {"action": "list"})
    assert listing.startswith("1 job(s):\n" + job_id + " 'tick' [active] every:10m -> append_line(")
    assert "last never" in listing
    out = _ok(system, {"action": "update", "job_id": job_id, "schedule": "cron:0 * * * *", "name": "hourly"})
    assert out.startswith(f"Updated job {job_id} 'hourly' [active] cron:0 * * * *")
    assert _jobs(system)[0]["next_run"] % 3600 == 0
    assert "[paused]" in _ok(system, {"action": "pause", "job_id": job_id})
    assert "[active]" in _ok(system, {"action": "resume", "job_id": job_id})
    assert _ok(system, {"action": "remove", "job_id": job_id}) == f"Removed job {job_id} 'hourly'."
    assert _ok(system, {"action": "list"}) == "No scheduled jobs."


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"action": "create", "name": "x", "schedule": "every:5m", "tool": "nope"}, "unknown tool 'nope'"),
        (
            {"action": "create", "name": "x", "schedule": "every:5m", "tool": "cronjob"},
            "cannot call 'cronjob'",
        ),
        ({"action": "create", "name": "x", "schedule": "every:1s", "tool": "todo"}, "between 1 minute"),
        ({"action": "create", "name": "x", "tool": "todo"}, "needs name, schedule and tool"),
        (
            {
                "action": "create",
                "name": "x",
                "schedule": "every:5m",
                "tool": "todo",
                "arguments": {"action": 5},
            },
            "do not fit 'todo'",
        ),
        ({"action": "pause", "job_id": "deadbeef"}, "no job 'deadbeef'"),
        ({"action": "run"}, "needs 'job_id'"),
        ({"action": "update", "job_id": "deadbeef"}, "needs at least one of"),
    ],
)
def test_bad_requests(system: ToolSystem, args: dict[str, Any], needle: str) -> None:
    assert needle in _err(system, args)
    assert not (system.data_dir / "cronjob" / "jobs.json").exists()


def test_run_now_goes_through_the_pipeline_and_records_the_result(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log, text="now")
    out = _ok(system, {"action": "run", "job_id": job_id})
    assert out == f"Ran job {job_id} (append_line): ok\nappended now"
    assert log.read_text(encoding="utf-8") == "now\n"
    job = _jobs(system)[0]
    assert (job["last_status"], job["last_result"], job["run_count"]) == ("ok", "appended now", 1)
    assert "(ok: appended now)" in _ok(system, {"action": "list"})


def test_due_jobs_run_once_even_after_many_missed_slots(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log)
    first = _jobs(system)[0]["next_run"]
    assert run_due_jobs(system, now=first - 1) == []
    later = first + 10 * 600 + 5  # ten slots missed
    runs = run_due_jobs(system, now=later)
    assert [(r.job_id, r.status, r.result) for r in runs] == [(job_id, "ok", "appended tick")]
    assert log.read_text(encoding="utf-8") == "tick\n"
    job = _jobs(system)[0]
    assert job["next_run"] == later + 600 and job["last_run"] == later
    assert run_due_jobs(system, now=later + 1) == []


def test_jobs_run_in_their_own_session(system: ToolSystem) -> None:
    args = {"action": "add", "items": ["from cron"]}
    out = _ok(
        system, {"action": "create", "name": "t", "schedule": "every:1h", "tool": "todo", "arguments": args}
    )
    job_id = out.split()[2]
    assert [r.status for r in run_due_jobs(system, now=time.time() + 7200)] == ["ok"]
    assert "[ ] 1. from cron" in system.call("todo", {"action": "list"}, session_id=f"cron-{job_id}")
    assert "empty" in system.call("todo", {"action": "list"})


def test_paused_jobs_do_not_run_and_resume_skips_missed_slots(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log)
    _ok(system, {"action": "pause", "job_id": job_id})
    assert run_due_jobs(system, now=time.time() + 86_400) == []
    _ok(system, {"action": "resume", "job_id": job_id})
    assert _jobs(system)[0]["next_run"] > time.time() + 500
    assert not log.exists()


def test_failing_jobs_are_recorded_and_do_not_stop_others(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    good = _create(system, log, text="good")
    bad_args = {"action": "update", "id": 42, "status": "completed"}
    _ok(
        system,
        {"action": "create", "name": "bad", "schedule": "every:10m", "tool": "todo", "arguments": bad_args},
    )
    runs = {r.name: r for r in run_due_jobs(system, now=time.time() + 3600)}
    assert runs["bad"].status == "error" and "no task with id 42" in runs["bad"].result
    assert runs["good"].status == "ok" and runs["good"].job_id == good
    assert log.read_text(encoding="utf-8") == "good\n"


_RUNNER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from test_cronjob import _AppendLine
    import hermes_builtin.plugin
    from hermes_core import ToolSystem
    from hermes_builtin.tools.work.cronjob import run_due_jobs
    plugins = [hermes_builtin.plugin, _AppendLine()]
    s = ToolSystem.load(plugins_dir=False, load_entry_points=False, plugins=plugins)
    while time.time() < float(sys.argv[2]):
        time.sleep(0.005)
    for run in run_due_jobs(s):
        print(run.status, flush=True)
    s.close()
    """
)


def test_overlapping_runners_never_run_the_same_job_twice(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log, text="slow", delay=0.6)
    _set_next_run(system, job_id, time.time() - 1)
    start_at = str(time.time() + 2.0)
    here = str(Path(__file__).parent)
    procs = [
        subprocess.Popen([sys.executable, "-c", _RUNNER, here, start_at], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    statuses = sorted(line for p in procs for line in p.communicate(timeout=60)[0].split())
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert log.read_text(encoding="utf-8") == "slow\n"
    assert statuses.count("ok") == 1
    assert set(statuses) <= {"ok", "skipped"}
    assert _jobs(system)[0]["run_count"] == 1


def test_run_now_refuses_while_a_runner_holds_the_job(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log, text="slow", delay=0.8)
    _set_next_run(system, job_id, time.time() - 1)
    worker = threading.Thread(target=run_due_jobs, args=(system,))
    worker.start()
    deadline = time.time() + 5
    while not log.exists() and time.time() < deadline:
        time.sleep(0.01)
    assert "is running right now" in _err(system, {"action": "run", "job_id": job_id})
    worker.join()
    assert log.read_text(encoding="utf-8") == "slow\n"


def test_run_loop_runs_due_jobs_until_stopped(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log, text="loop")
    _set_next_run(system, job_id, time.time() + 0.3)
    seen: list[JobRun] = []
    stop = threading.Event()
    result: list[int] = []
    loop = threading.Thread(target=lambda: result.append(run_loop(system, 5.0, stop, seen.append)))
    loop.start()
    deadline = time.time() + 10
    while not seen and time.time() < deadline:
        time.sleep(0.02)
    stop.set()
    loop.join(timeout=5)
    assert not loop.is_alive()
    assert [(r.job_id, r.status) for r in seen] == [(job_id, "ok")]
    assert result == [1]
    assert log.read_text(encoding="utf-8") == "loop\n"


def test_corrupt_jobs_file_is_reported_and_kept(system: ToolSystem) -> None:
    path = system.data_dir / "cronjob" / "jobs.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"jobs": [', encoding="utf-8")
    assert "corrupt" in _err(system, {"action": "list"})
    assert "corrupt" in _err(
        system,
        {
            "action": "create",
            "name": "x",
            "schedule": "every:5m",
            "tool": "todo",
            "arguments": {"action": "list"},
        },
    )
    assert path.read_text(encoding="utf-8") == '{"jobs": ['


# -- jobs that run commands: provenance, approval, their own workspace and the sandbox -----------------


class _Approver:
    """Answers every approval request with ``answer`` and remembers the requests."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.requests: list[Any] = []

    def approve(self, request: Any) -> str:
        self.requests.append(request)
        return self.answer


def _terminal_job(command: str, name: str = "cmd") -> dict[str, Any]:
    return {
        "action": "create",
        "name": name,
        "schedule": "every:1h",
        "tool": "terminal",
        "arguments": {"command": command},
    }


def test_a_job_records_its_workspace_selection_and_creator(system: ToolSystem, workspace: Path) -> None:
    out = _ok(
        system,
        {
            "action": "create",
            "name": "t",
            "schedule": "every:1h",
            "tool": "todo",
            "arguments": {"action": "list"},
        },
    )
    job = _jobs(system)[0]
    assert out.split()[2] == job["id"]
    assert job["workspace"] == str(workspace.resolve())
    assert "todo" in job["selection"] and "cronjob" in job["selection"]
    assert job["creator"]["session"] == "default" and job["creator"]["call"]
    refused = system.call_outcome(
        "cronjob",
        {
            "action": "create",
            "name": "t",
            "schedule": "every:1h",
            "tool": "terminal",
            "arguments": {"command": "ls"},
        },
        enabled=["cronjob", "todo"],
    )
    assert refused.status == "error" and "not among the tools of this conversation" in refused.result


def test_creating_a_command_job_needs_approval(
    make_builtin_system: Callable[..., ToolSystem], workspace: Path
) -> None:
    headless = make_builtin_system()
    outcome = headless.call_outcome("cronjob", _terminal_job("echo hi"))
    assert outcome.status == "denied"
    assert not (headless.data_dir / "cronjob" / "jobs.json").exists()
    approver = _Approver("once")
    asked = make_builtin_system(approver=approver)
    assert asked.call_outcome("cronjob", _terminal_job("echo hi")).status == "ok"
    (request,) = approver.requests
    assert (
        request.kind == "cron"
        and "echo hi" in request.subject
        and str(workspace.resolve()) in request.subject
    )
    never = asked.call_outcome("cronjob", _terminal_job("rm -rf --no-preserve-root /"))
    assert never.status == "error" and "never allowed" in never.result
    allowed = make_builtin_system(config={"plugins": {"cronjob": {"commands": "allow"}}})
    assert allowed.call_outcome("cronjob", _terminal_job("echo hi")).status == "ok"


def test_a_job_runs_in_its_own_workspace_through_the_sandbox(
    make_builtin_system: Callable[..., ToolSystem], tmp_path: Path, fake_home: Path
) -> None:
    config = {"plugins": {"cronjob": {"commands": "allow"}}}
    project = tmp_path / "project"
    project.mkdir()
    (fake_home / ".ssh" / "id_rsa").write_text("PLANTED-KEY\n")
    maker = make_builtin_system(config=config, workspace=project)
    _ok(maker, _terminal_job("pwd > where.txt; rm -rf .ssh .aws"))  # harmless in the project, not in $HOME
    runner = make_builtin_system(config=config, workspace=fake_home)  # `hermes cron run` started in $HOME
    (run,) = run_due_jobs(runner, now=time.time() + 7200)
    assert run.status == "ok", run.result
    assert (project / "where.txt").read_text().strip() == str(project.resolve())
    assert (fake_home / ".ssh" / "id_rsa").read_text() == "PLANTED-KEY\n"
    assert not (fake_home / "where.txt").exists()
    # with every guard off, the sandbox alone still keeps the job inside its workspace
    path = maker.data_dir / "cronjob" / "jobs.json"
    path.unlink()
    _ok(
        maker,
        _terminal_job(
            f"cat ~/.ssh/id_rsa {fake_home}/.ssh/id_rsa > stolen.txt 2>&1; rm -rf {fake_home}/.ssh"
        ),
    )
    (run,) = run_due_jobs(unguarded(runner), now=time.time() + 7200)
    assert run.status == "ok", run.result
    assert "PLANTED-KEY" not in (project / "stolen.txt").read_text()
    assert (fake_home / ".ssh" / "id_rsa").read_text() == "PLANTED-KEY\n"


def test_a_job_command_is_judged_again_when_it_runs(
    make_builtin_system: Callable[..., ToolSystem], workspace: Path
) -> None:
    approver = _Approver("once")
    system = make_builtin_system(approver=approver)
    _ok(system, _terminal_job("mkfs.ext4 /dev/hermes-test-no-such-device"))
    assert "will need approval again" in approver.requests[0].reason
    headless = make_builtin_system()
    (run,) = run_due_jobs(headless, now=time.time() + 7200)
    assert run.status == "denied" and "approval" in run.result


def test_jobs_without_a_recorded_workspace_do_not_run(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log)
    path = system.data_dir / "cronjob" / "jobs.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["jobs"][0]["workspace"]  # as written by an older version
    path.write_text(json.dumps(data), encoding="utf-8")
    (run,) = run_due_jobs(system, now=time.time() + 7200)
    assert (run.job_id, run.status) == (job_id, "error") and "re-create" in run.result
    assert not log.exists()
