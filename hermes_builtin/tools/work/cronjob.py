"""``cronjob``: scheduled tool calls, plus ``run_due_jobs`` / ``run_loop`` for the ``hermes cron run`` command.

Jobs live in ``<data dir>/cronjob/jobs.json`` (atomic writes under a file lock). A job runs one tool call
(``tool`` + ``arguments``) through the tool system's pipeline, so hooks, guards and size limits apply; its
calls use the session id ``cron-<job id>``.

A job records where and by whom it was made: its ``workspace``, the tools its creator could use
(``selection``) and its ``creator`` (session and call). It runs in that workspace (file tools, guards and
the sandbox all see it, not the runner's directory) and may call only those tools. A job whose tool runs
commands (``terminal``, ``execute_code``) needs a human's approval to be created, since it will run later
with nobody watching; headless hosts are refused unless ``[plugins.cronjob] commands = "allow"``. Its
command is judged again by the guard each time it runs.

Schedules (all times UTC):

- ``every:<N><s|m|h|d>``, e.g. ``every:30m``: every N units, at least one minute; the next run is counted
  from the moment a run starts.
- ``cron:<expr>``, e.g. ``cron:0 9 * * 1-5``: a five-field cron expression (or ``@hourly``, ``@daily``...),
  evaluated by ``croniter``. A bare five-field expression is accepted too.

Catch-up policy: a job whose time passed while no runner was active runs once at the next pass, never once
per missed slot; its next run is then the first slot after that pass. A paused job skips its slots and
resumes from the next slot after ``resume``.

Overlap policy: a run holds an exclusive ``flock`` on ``locks/<job id>.lock``; another runner (thread or
process) finding it taken skips the job, and a runner that gets the lock re-reads the job and runs it only
if it is still due, so two runners never run the same slot twice.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from hermes_core import CallContext, ToolError, ToolRegistry

from ._state import file_lock, read_json, update_json

if TYPE_CHECKING:
    from hermes_core import Host

__all__ = ["JobRun", "next_run_after", "parse_schedule", "run_due_jobs", "run_loop"]

log = logging.getLogger("hermes.cron")

TOOLSET = "cronjob"
MAX_JOBS = 100
MAX_RESULT = 2_000
MIN_INTERVAL = 60
MAX_INTERVAL = 366 * 86_400
FORBIDDEN_TOOLS = frozenset({"cronjob", "clarify"})
COMMAND_TOOLS = frozenset({"terminal", "execute_code"})
_EVERY = re.compile(r"^every:\s*(\d{1,9})\s*([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}

SCHEMA: dict[str, Any] = {
    "name": "cronjob",
    "description": (
        "Schedule tool calls. create: name, schedule, tool, arguments (the call to make). "
        "schedule is 'every:<N><s|m|h|d>' (min 1 minute, e.g. every:2h) or 'cron:<5-field expr>' in UTC "
        "(e.g. cron:0 9 * * 1-5). list shows jobs with ids, next and last runs. update (job_id + fields), "
        "pause, resume, remove, run (now) take job_id. A missed slot runs once when the scheduler is back."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["create", "list", "update", "pause", "resume", "remove", "run"],
            },
            "job_id": {"type": "string", "maxLength": 64},
            "name": {"type": "string", "minLength": 1, "maxLength": 100},
            "schedule": {"type": "string", "minLength": 1, "maxLength": 120},
            "tool": {"type": "string", "minLength": 1, "maxLength": 128, "description": "Tool to call."},
            "arguments": {"type": "object", "description": "Arguments of that tool call."},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}


class JobRun(NamedTuple):
    """One executed (or skipped) job: ``status`` is the call's status (ok/error/blocked/denied) or ``skipped``."""

    job_id: str
    name: str
    tool: str
    status: str
    result: str
    started_at: float
    duration_ms: float


def parse_schedule(schedule: str) -> str:
    """The normalized schedule string; raises ``ToolError`` with a usable message when it is invalid."""
    text = " ".join(schedule.split())
    every = _EVERY.match(text)
    if every:
        seconds = int(every.group(1)) * _UNITS[every.group(2)]
        if not MIN_INTERVAL <= seconds <= MAX_INTERVAL:
            raise ToolError(f"interval {text!r} must be between 1 minute and 366 days")
        return f"every:{every.group(1)}{every.group(2)}"
    expr = text[5:].strip() if text.startswith("cron:") else text
    if expr.startswith("every"):
        raise ToolError(f"bad interval {text!r}; write e.g. every:15m, every:2h or every:1d")
    from croniter import croniter

    if not (expr.startswith("@") or len(expr.split()) == 5) or not croniter.is_valid(expr):
        raise ToolError(
            f"bad schedule {text!r}; use every:<N><s|m|h|d> or cron:<minute hour day month weekday>, "
            "e.g. cron:*/15 * * * *"
        )
    return f"cron:{expr}"


def next_run_after(schedule: str, after: float) -> float:
    """The first run time (UNIX seconds) strictly after ``after`` for a normalized schedule."""
    if schedule.startswith("every:"):
        spec = schedule[6:]
        return after + int(spec[:-1]) * _UNITS[spec[-1]]
    from datetime import UTC, datetime

    from croniter import croniter

    start = datetime.fromtimestamp(after, tz=UTC)
    nxt: datetime = croniter(schedule[5:], start).get_next(datetime)
    return nxt.timestamp()


def _dir(data_dir: Path) -> Path:
    return data_dir / TOOLSET


def _jobs_path(data_dir: Path) -> Path:
    return _dir(data_dir) / "jobs.json"


def _lock_path(data_dir: Path, job_id: str) -> Path:
    return _dir(data_dir) / "locks" / f"{job_id}.lock"


def _jobs(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, dict) or not isinstance(raw.get("jobs"), list):
        return []
    return [j for j in raw["jobs"] if isinstance(j, dict) and isinstance(j.get("id"), str)]


def _iso(ts: float | None) -> str:
    if ts is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def _cut(text: str) -> str:
    return text if len(text) <= MAX_RESULT else text[:MAX_RESULT] + f" …(cut, {len(text)} chars)"


def _describe(job: dict[str, Any]) -> str:
    import json

    args = json.dumps(job.get("arguments", {}), ensure_ascii=False)
    if len(args) > 200:
        args = args[:200] + "…"
    state = "active" if job.get("enabled", True) else "paused"
    line = (
        f"{job['id']} '{job.get('name', '')}' [{state}] {job.get('schedule')} -> {job.get('tool')}({args}); "
        f"next {_iso(job.get('next_run')) if job.get('enabled', True) else '-'}, last {_iso(job.get('last_run'))}"
    )
    if job.get("last_status"):
        result = " ".join(str(job.get("last_result", "")).split())[:160]
        line += f" ({job['last_status']}: {result})"
    return line


def _check_tool(context: CallContext, tool: str, arguments: dict[str, Any]) -> None:
    if tool in FORBIDDEN_TOOLS:
        raise ToolError(f"a job cannot call {tool!r}")
    host = context.host
    entry = host.tool(tool) if host is not None else None
    if host is not None and entry is None:
        raise ToolError(f"unknown tool {tool!r}")
    if context.enabled is not None and tool not in context.enabled:
        raise ToolError(f"a job cannot call {tool!r}: it is not among the tools of this conversation")
    if entry is None:
        return
    from hermes_core.schema import ToolArgumentError, parse_tool_arguments

    try:
        parse_tool_arguments(entry.schema, arguments)
    except ToolArgumentError as exc:
        raise ToolError(f"the arguments do not fit {tool!r}: {exc}") from None


def _approve_command_job(context: CallContext, tool: str, arguments: dict[str, Any], workspace: str) -> None:
    """A job that runs commands needs a human's yes (or ``[plugins.cronjob] commands = "allow"``)."""
    import json

    if tool not in COMMAND_TOOLS:
        return
    reason = f"schedules a {tool} call that will run later, unattended, in {workspace}"
    command = arguments.get("command")
    if tool == "terminal" and isinstance(command, str):
        verdict = context.classify_command(command, workspace)
        if verdict.hardline:
            raise ToolError(f"a job cannot run this command: it is never allowed ({verdict.reason})")
        if verdict.dangerous:
            reason += (
                f"; the command is dangerous ({verdict.reason}) and will need approval again when it runs"
            )
    try:
        settings = context.plugin_config(TOOLSET)
    except Exception:
        settings = {}
    if isinstance(settings, dict) and settings.get("commands") == "allow":
        return
    subject = f"cron {tool} in {workspace}: {json.dumps(arguments, sort_keys=True, ensure_ascii=False)}"
    context.request_approval(subject, reason, "cron")


def cronjob(
    action: str,
    job_id: str | None = None,
    name: str | None = None,
    schedule: str | None = None,
    tool: str | None = None,
    arguments: dict[str, Any] | None = None,
    *,
    context: CallContext,
) -> str:
    """Create, list, update, pause, resume, remove or run-now a scheduled job."""
    data_dir = context.data_dir
    path = _jobs_path(data_dir)
    if action == "list":
        jobs = _jobs(read_json(path, None))
        if not jobs:
            return "No scheduled jobs."
        return f"{len(jobs)} job(s):\n" + "\n".join(_describe(j) for j in jobs)
    if action == "run":
        return _run_now(context, _need_id(job_id, action))
    if action == "create":
        if not (name and schedule and tool):
            raise ToolError("create needs name, schedule and tool (and usually arguments)")
        norm = parse_schedule(schedule)
        args = arguments or {}
        _check_tool(context, tool, args)
        workspace = str(Path(context.workspace).resolve())
        _approve_command_job(context, tool, args, workspace)
        now = time.time()
        job: dict[str, Any] = {
            "id": os.urandom(4).hex(),
            "name": " ".join(name.split()),
            "schedule": norm,
            "tool": tool,
            "arguments": args,
            "enabled": True,
            "created_at": now,
            "next_run": next_run_after(norm, now),
            "last_run": None,
            "last_status": None,
            "last_result": None,
            "run_count": 0,
            "workspace": workspace,
            "selection": sorted(context.enabled) if context.enabled is not None else None,
            "creator": {"session": context.session_id, "call": context.call_id, "at": now},
        }
        with update_json(path, None) as box:
            jobs = _jobs(box[0])
            if len(jobs) >= MAX_JOBS:
                raise ToolError(f"there are already {MAX_JOBS} jobs; remove some first")
            jobs.append(job)
            box[0] = {"jobs": jobs}
        return f"Created job {_describe(job)}"
    if action not in ("update", "pause", "resume", "remove"):
        raise ToolError(f"unknown action {action!r}")
    wanted = _need_id(job_id, action)
    new_schedule: str | None = None
    if action == "update":
        if not any(v is not None for v in (name, schedule, tool, arguments)):
            raise ToolError("update needs at least one of name, schedule, tool, arguments")
        new_schedule = parse_schedule(schedule) if schedule is not None else None
    with update_json(path, None) as box:
        jobs = _jobs(box[0])
        box[0] = {"jobs": jobs}
        job = _find(jobs, wanted)
        now = time.time()
        if action == "remove":
            jobs.remove(job)
            return f"Removed job {wanted} '{job.get('name', '')}'."
        if action == "pause":
            job["enabled"] = False
        elif action == "resume":
            job["enabled"] = True
            job["next_run"] = next_run_after(job["schedule"], now)
        else:
            if name is not None:
                job["name"] = " ".join(name.split())
            if tool is not None or arguments is not None:
                new_tool = tool if tool is not None else job["tool"]
                new_args = arguments if arguments is not None else job.get("arguments", {})
                _check_tool(context, new_tool, new_args)
                _approve_command_job(
                    context, new_tool, new_args, str(job.get("workspace") or context.workspace)
                )
                job["tool"], job["arguments"] = new_tool, new_args
            if new_schedule is not None:
                job["schedule"] = new_schedule
                job["next_run"] = next_run_after(new_schedule, now)
        return f"{action.capitalize()}d job {_describe(job)}"


def _need_id(job_id: str | None, action: str) -> str:
    if not job_id:
        raise ToolError(f"{action} needs 'job_id' (see action list)")
    return job_id.strip()


def _find(jobs: list[dict[str, Any]], job_id: str) -> dict[str, Any]:
    for job in jobs:
        if job["id"] == job_id:
            return job
    known = ", ".join(j["id"] for j in jobs) or "none"
    raise ToolError(f"no job {job_id!r} (jobs: {known})")


def _record(data_dir: Path, job_id: str, started: float, status: str, result: str) -> None:
    with update_json(_jobs_path(data_dir), None) as box:
        jobs = _jobs(box[0])
        box[0] = {"jobs": jobs}
        for job in jobs:
            if job["id"] == job_id:
                job["last_run"] = started
                job["last_status"] = status
                job["last_result"] = _cut(result)
                job["run_count"] = int(job.get("run_count") or 0) + 1


def _run_now(context: CallContext, job_id: str) -> str:
    system = context.host
    if system is None:
        raise ToolError("no tool system is available to run the job")
    data_dir = context.data_dir
    job = _find(_jobs(read_json(_jobs_path(data_dir), None)), job_id)
    with file_lock(_lock_path(data_dir, job_id), blocking=False) as got:
        if not got:
            raise ToolError(f"job {job_id} is running right now; try again later")
        started = time.time()
        status, result = _call_job(system, job)
        _record(data_dir, job_id, started, status, result)
    return f"Ran job {job_id} ({job['tool']}): {status}\n{_cut(result)}"


def _call_job(system: Host, job: dict[str, Any]) -> tuple[str, str]:
    """Run a job's call in its recorded workspace, limited to its recorded tools: ``(status, result)``."""
    from hermes_core.sandbox import calls_in_workspace

    workspace = job.get("workspace")
    if not isinstance(workspace, str) or not workspace:
        return (
            "error",
            "this job has no recorded workspace (made by an older version); remove and re-create it",
        )
    if not Path(workspace).is_dir():
        return "error", f"the job's workspace {workspace} no longer exists"
    selection = job.get("selection")
    enabled = tuple(selection) if isinstance(selection, list) else None
    session = f"cron-{job['id']}"
    with calls_in_workspace(workspace):
        try:
            outcome = system.call_outcome(
                job["tool"], dict(job.get("arguments") or {}), enabled=enabled, session_id=session
            )
        finally:
            system.close_session(
                session
            )  # each run starts fresh: its environment, /tmp and processes end here
    return outcome.status, outcome.result


def _claim(data_dir: Path, job_id: str, now: float) -> dict[str, Any] | None:
    """Advance a still-due job's next run (once, whatever was missed) and return it; None if not due."""
    with update_json(_jobs_path(data_dir), None) as box:
        jobs = _jobs(box[0])
        box[0] = {"jobs": jobs}
        for job in jobs:
            if job["id"] == job_id:
                next_run = job.get("next_run")
                if not job.get("enabled", True) or not isinstance(next_run, int | float) or next_run > now:
                    return None
                job["next_run"] = next_run_after(job["schedule"], now)
                return dict(job)
    return None


def run_due_jobs(system: Host, now: float | None = None) -> list[JobRun]:
    """Run every job due at ``now`` (default: the current time) through ``system`` and return what happened.

    Each due job runs once however many slots were missed; a job another runner holds is reported as
    ``skipped``. Safe to call from several processes at once.
    """
    data_dir = system.data_dir
    when = time.time() if now is None else float(now)
    runs: list[JobRun] = []
    for job in _jobs(read_json(_jobs_path(data_dir), None)):
        next_run = job.get("next_run")
        if not job.get("enabled", True) or not isinstance(next_run, int | float) or next_run > when:
            continue
        with file_lock(_lock_path(data_dir, job["id"]), blocking=False) as got:
            if not got:
                runs.append(
                    JobRun(
                        job["id"],
                        str(job.get("name", "")),
                        str(job.get("tool")),
                        "skipped",
                        "another runner is running this job",
                        when,
                        0.0,
                    )
                )
                continue
            claimed = _claim(data_dir, job["id"], when)
            if claimed is None:
                continue
            started = time.perf_counter()
            try:
                status, result = _call_job(system, claimed)
            except Exception as exc:  # call_outcome should never raise; keep the scheduler alive if it does
                status, result = "error", f"the scheduler could not run the call: {type(exc).__name__}"
            duration = (time.perf_counter() - started) * 1000
            _record(data_dir, claimed["id"], when, status, result)
            runs.append(
                JobRun(
                    claimed["id"],
                    str(claimed.get("name", "")),
                    claimed["tool"],
                    status,
                    result,
                    when,
                    duration,
                )
            )
    return runs


def run_loop(
    system: Host,
    interval: float = 30.0,
    stop_event: threading.Event | None = None,
    on_run: Callable[[JobRun], None] | None = None,
) -> int:
    """Run due jobs until ``stop_event`` is set, checking at least every ``interval`` seconds.

    Wakes up early when a job falls due sooner; ``on_run`` sees each run as it finishes. A broken jobs
    file is logged and retried at the next pass. Returns how many jobs ran.
    """
    stop = stop_event if stop_event is not None else threading.Event()
    count = 0
    while not stop.is_set():
        wait = interval
        try:
            for run in run_due_jobs(system):
                count += run.status != "skipped"
                if on_run is not None:
                    on_run(run)
            upcoming = [
                j["next_run"]
                for j in _jobs(read_json(_jobs_path(system.data_dir), None))
                if j.get("enabled", True) and isinstance(j.get("next_run"), int | float)
            ]
            if upcoming:
                wait = min(wait, min(upcoming) - time.time())
        except ToolError as exc:
            log.error("cron: %s", exc.message)
        stop.wait(max(wait, 0.05))
    return count


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="cronjob",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=cronjob,
        emoji="⏰",
        max_result_size_chars=30_000,
    )
