"""``cronjob`` through ``ToolSystem.call``, and the scheduler running what it made (``hermes_core.scheduler``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ToolRegistry, ToolSystem, hookimpl
from hermes_core.scheduler import Job, JobStore, Run, ScheduleError, Scheduler, next_slot, parse_schedule
from hermes_core.testing import unguarded

T0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC


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


def _jobs(system: ToolSystem) -> list[Job]:
    return JobStore.for_system(system).list_jobs()


def _pass(system: ToolSystem, now: float) -> list[Run]:
    """One scheduler pass at ``now``."""
    return Scheduler(system).run_pending(now=now)


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
    with pytest.raises(ScheduleError):
        parse_schedule(raw)


def test_slots_for_intervals_and_cron_in_utc() -> None:
    assert next_slot("every:90m", T0, T0) == T0 + 5400
    assert next_slot("every:90m", T0, T0 + 5400) == T0 + 10800  # strictly after
    # 2023-11-14 22:13:20 UTC is a Tuesday: the next weekday 09:00 UTC is Wednesday 2023-11-15 09:00
    assert next_slot("cron:0 9 * * 1-5", T0, T0) == 1_700_038_800
    assert next_slot("cron:0 9 * * 1-5", T0, 1_700_038_800) == 1_700_038_800 + 86_400


def test_create_list_update_pause_resume_remove(system: ToolSystem, tmp_path: Path) -> None:
    job_id = _create(system, tmp_path / "log.txt")
    listing = _ok(system, {"action": "list"})
    assert listing.startswith("1 job(s):\n" + job_id + " 'tick' [active] every:10m -> append_line(")
    out = _ok(system, {"action": "update", "job_id": job_id, "schedule": "cron:0 * * * *", "name": "hourly"})
    assert out.startswith(f"Updated job {job_id} 'hourly' [active] cron:0 * * * *")
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
        ({"action": "create", "name": "x", "tool": "todo"}, "needs name and schedule"),
        ({"action": "create", "name": "x", "schedule": "every:5m"}, "either 'tool'"),
        (
            {"action": "create", "name": "x", "schedule": "every:5m", "tool": "todo", "prompt": "hi"},
            "either 'tool'",
        ),
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
        (
            {"action": "create", "name": "x", "schedule": "every:5m", "prompt": "hi", "deliver": ["ftp:x"]},
            "unknown delivery",
        ),
        (
            {"action": "create", "name": "x", "schedule": "every:5m", "prompt": "hi", "toolsets": ["nope"]},
            "toolsets:",
        ),
        ({"action": "pause", "job_id": "deadbeef"}, "no job 'deadbeef'"),
        ({"action": "run"}, "needs 'job_id'"),
        ({"action": "update", "job_id": "deadbeef"}, "no job 'deadbeef'"),
    ],
)
def test_bad_requests(system: ToolSystem, args: dict[str, Any], needle: str) -> None:
    assert needle in _err(system, args)
    assert _jobs(system) == []


def test_run_now_goes_through_the_pipeline_and_records_the_run(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log, text="now")
    out = _ok(system, {"action": "run", "job_id": job_id})
    assert out == f"Ran job {job_id} (append_line): ok\nappended now"
    assert log.read_text(encoding="utf-8") == "now\n"
    (run,) = JobStore.for_system(system).history(job_id)
    assert (run.status, run.output, run.trigger, run.slot) == ("ok", "appended now", "manual", None)
    assert run.duration_ms is not None and run.duration_ms >= 0
    assert "ok: appended now" in _ok(system, {"action": "list"})
    assert "ok (" in _ok(system, {"action": "runs", "job_id": job_id})


def test_due_jobs_run_once_even_after_many_missed_slots(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log)
    (job,) = _jobs(system)
    first = job.anchor + 600
    assert _pass(system, first - 1) == []
    later = first + 10 * 600 + 5  # ten slots missed
    runs = _pass(system, later)
    assert [(r.job_id, r.status, r.output, r.missed) for r in runs] == [(job_id, "ok", "appended tick", 10)]
    assert log.read_text(encoding="utf-8") == "tick\n"
    assert _jobs(system)[0].last_slot == first + 10 * 600
    assert _pass(system, later + 1) == []
    assert [r.status for r in _pass(system, later + 600)] == ["ok"]  # the next slot runs on time


def test_catch_up_skip_records_late_slots_instead_of_running_them(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log)
    _ok(system, {"action": "update", "job_id": job_id, "catch_up": "skip"})
    (job,) = _jobs(system)
    late = job.anchor + 3 * 600 + 300  # the last slot is 5 minutes late: past the 60 s grace
    (run,) = _pass(system, late)
    assert run.status == "skipped" and "3 slot(s) missed" in run.output and not log.exists()
    on_time = job.anchor + 4 * 600 + 2
    assert [r.status for r in _pass(system, on_time)] == ["ok"]
    assert log.read_text(encoding="utf-8") == "tick\n"


def test_job_calls_run_in_a_session_of_their_own(system: ToolSystem) -> None:
    args = {"action": "add", "items": ["from cron"]}
    _ok(system, {"action": "create", "name": "t", "schedule": "every:1h", "tool": "todo", "arguments": args})
    (run,) = _pass(system, time.time() + 7200)
    assert run.status == "ok" and "from cron" in run.output and run.session_id.startswith("cron-")
    assert "empty" in system.call("todo", {"action": "list"})


def test_paused_jobs_do_not_run_and_resume_skips_missed_slots(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log)
    _ok(system, {"action": "pause", "job_id": job_id})
    assert _pass(system, time.time() + 86_400) == []
    _ok(system, {"action": "resume", "job_id": job_id})
    assert _pass(system, time.time() + 5) == []  # the slots it slept through are gone
    assert not log.exists()


def test_failing_jobs_are_recorded_and_do_not_stop_others(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    good = _create(system, log, text="good")
    bad_args = {"action": "update", "id": 42, "status": "completed"}
    _ok(
        system,
        {"action": "create", "name": "bad", "schedule": "every:10m", "tool": "todo", "arguments": bad_args},
    )
    names = {j.id: j.name for j in _jobs(system)}
    runs = {names[r.job_id]: r for r in _pass(system, time.time() + 3600)}
    assert runs["bad"].status == "error" and "no task with id 42" in runs["bad"].output
    assert runs["good"].status == "ok" and runs["good"].job_id == good
    assert log.read_text(encoding="utf-8") == "good\n"


def test_a_run_in_progress_refuses_run_now_and_skips_its_next_slot(
    system: ToolSystem, tmp_path: Path
) -> None:
    import threading

    log = tmp_path / "log.txt"
    job_id = _create(system, log, text="slow", delay=1.0)
    (job,) = _jobs(system)
    slow = Scheduler(system, lease=3600)  # virtual time jumps ahead below: the lease must outlast it
    worker = threading.Thread(target=slow.run_pending, kwargs={"now": job.anchor + 601})
    worker.start()
    deadline = time.time() + 5
    while not log.exists() and time.time() < deadline:
        time.sleep(0.01)
    assert "is running right now" in _err(system, {"action": "run", "job_id": job_id})
    (skipped,) = Scheduler(system).run_pending(now=job.anchor + 1201)
    assert skipped.status == "skipped" and "still going" in skipped.output
    worker.join()
    assert log.read_text(encoding="utf-8") == "slow\n"


def test_a_run_whose_scheduler_died_is_marked_abandoned(system: ToolSystem, tmp_path: Path) -> None:
    job_id = _create(system, tmp_path / "log.txt")
    store = JobStore.for_system(system)
    (job,) = store.list_jobs()
    slot = job.anchor + 600
    assert store.claim_slot(job_id, slot, "dead-host:1:x", slot + 1, 30) is not None
    assert store.reap(slot + 20) == 0
    assert store.reap(slot + 40) == 1
    (run,) = store.history(job_id)
    assert run.status == "abandoned" and "lease ran out" in run.output
    assert _pass(system, slot + 41) == []  # the abandoned slot is not run again


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
    assert out.split()[2] == job.id
    assert job.workspace == str(workspace.resolve())
    assert job.selection is not None and "todo" in job.selection and "cronjob" in job.selection
    assert job.creator["session"] == "default" and job.creator["call"]
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
    assert _jobs(headless) == []
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
    (run,) = _pass(runner, time.time() + 7200)
    assert run.status == "ok", run.output
    assert (project / "where.txt").read_text().strip() == str(project.resolve())
    assert (fake_home / ".ssh" / "id_rsa").read_text() == "PLANTED-KEY\n"
    assert not (fake_home / "where.txt").exists()
    # with every guard off, the sandbox alone still keeps the job inside its workspace
    store = JobStore.for_system(maker)
    for job in store.list_jobs():
        store.remove(job.id)
    _ok(
        maker,
        _terminal_job(
            f"cat ~/.ssh/id_rsa {fake_home}/.ssh/id_rsa > stolen.txt 2>&1; rm -rf {fake_home}/.ssh"
        ),
    )
    (run,) = _pass(unguarded(runner), time.time() + 7200)
    assert run.status == "ok", run.output
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
    (run,) = _pass(headless, time.time() + 7200)
    assert run.status == "denied" and "approval" in run.output
    # a host whose approver says yes still runs its jobs headless: nobody is there when they run
    again = make_builtin_system(approver=_Approver("once"))
    store = JobStore.for_system(again)
    (job,) = store.list_jobs()
    (run,) = Scheduler(again).run_pending(now=job.anchor + 3 * 3600 + 1)
    assert run.status == "denied" and again.approver.requests == []


def test_jobs_without_a_recorded_workspace_do_not_run(system: ToolSystem, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    job_id = _create(system, log)
    store = JobStore.for_system(system)
    (job,) = store.list_jobs()
    job.workspace = None
    store.save(job)
    (run,) = _pass(system, time.time() + 7200)
    assert (run.job_id, run.status) == (job_id, "error") and "re-create" in run.output
    assert not log.exists()
