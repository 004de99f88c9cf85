"""``cronjob``: the model's way to schedule jobs for ``hermes_core.scheduler`` (tool calls or agent prompts).

Jobs live in the scheduler's store (``[scheduler] store``, default ``<data dir>/scheduler/jobs.db``) and run in
every long-lived hermes process that runs a scheduler (``hermes chat``, ``hermes mcp serve``, ``hermes cron
serve``, a ``ToolSystem`` loaded with ``scheduler=True``), each due slot exactly once.

A job records where and by whom it was made: its ``workspace``, the tools its creator could use (``selection``)
and its ``creator`` (session and call). It runs in that workspace, may use only those tools, and runs headless:
anything that needs approval when it runs is denied unless a standing approval allows it. A job whose tool runs
commands (``terminal``, ``execute_code``), and every agent job that may run commands, needs a human's approval to
be created, since it will run later with nobody watching; headless hosts are refused unless ``[plugins.cronjob]
commands = "allow"``. Its commands are judged again by the guard each time they run.

An agent job (``prompt``) runs ``hermes_core.agent.Agent`` with the job's ``model``, ``toolsets`` and ``skills``
(defaults from ``[scheduler]``); its answer is delivered to each ``deliver`` target (see
``hermes_core.scheduler``) and recorded with the run (``action=runs``, ``hermes cron runs JOB``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry

if TYPE_CHECKING:
    from collections.abc import Callable

    from hermes_core.scheduler import Job, JobStore, Run

__all__ = ["COMMAND_TOOLS", "MAX_JOBS", "job_line", "run_line"]

TOOLSET = "cronjob"
MAX_JOBS = 100
MAX_SHOWN = 2_000
COMMAND_TOOLS = frozenset({"terminal", "execute_code"})
_LIST = {"type": "array", "items": {"type": "string"}}

SCHEMA: dict[str, Any] = {
    "name": "cronjob",
    "description": (
        "Schedule jobs (UTC): every:<N><m|h|d> or cron:<expr>. create: name, schedule, tool+arguments or "
        "prompt (agent: +skills, toolsets, model). deliver: file:PATH, session:ID, telegram|discord|"
        "slack[:TARGET]. Other actions need job_id. A missed slot runs once (catch_up=skip: not)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["create", "list", "runs", "update", "pause", "resume", "remove", "run"],
            },
            "job_id": {"type": "string"},
            "name": {"type": "string"},
            "schedule": {"type": "string"},
            "tool": {"type": "string"},
            "arguments": {"type": "object"},
            "prompt": {"type": "string"},
            "skills": _LIST,
            "toolsets": _LIST,
            "model": {"type": "string"},
            "deliver": _LIST,
            "catch_up": {"enum": ["once", "skip"]},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}


def _iso(ts: float | None) -> str:
    if ts is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def _cut(text: str, limit: int = MAX_SHOWN) -> str:
    return text if len(text) <= limit else text[:limit] + f" …(cut, {len(text)} chars)"


def job_line(job: Job, last: Run | None = None) -> str:
    """One job as the tool and ``hermes cron list`` show it."""
    from hermes_core.scheduler import next_slot

    if job.kind == "agent":
        what = "agent: " + " ".join(str(job.prompt).split())[:120]
    else:
        args = json.dumps(job.arguments, ensure_ascii=False)
        what = f"{job.tool}({args if len(args) <= 200 else args[:200] + '…'})"
    state = "active" if job.enabled else "paused"
    nxt = next_slot(job.schedule, job.anchor, max(time.time(), float(job.last_slot or 0)))
    line = (
        f"{job.id} '{job.name}' [{state}] {job.schedule} -> {what}; next {_iso(nxt) if job.enabled else '-'}"
    )
    if job.deliver:
        line += f"; deliver {', '.join(job.deliver)}"
    if last is not None:
        line += f"; last {_iso(last.started_at)} {last.status}: {' '.join(last.output.split())[:160]}"
    return line


def run_line(run: Run) -> str:
    """One run as the tool and ``hermes cron runs`` show it."""
    took = f"{run.duration_ms:.0f} ms" if run.duration_ms is not None else "running"
    slot = f"slot {_iso(run.slot)}" if run.slot is not None else "manual"
    missed = f", stood for {run.missed + 1} missed slots" if run.missed else ""
    return f"#{run.id} {_iso(run.started_at)} {run.status} ({took}, {slot}{missed}): {_cut(run.output, 300)}"


def _store(context: CallContext) -> JobStore:
    from hermes_core.scheduler import JobStore

    assert context.host is not None
    return JobStore.for_system(context.host)


def _wake(context: CallContext) -> None:
    """Tell a scheduler running in this process that the jobs changed."""
    if context.host is not None:
        wakers: list[Callable[[], None]] = context.host.stash(
            "scheduler.wakers", list, cleanup=lambda _w: None
        )
        for wake in wakers:
            wake()


def _schedule(schedule: str) -> str:
    from hermes_core.scheduler import ScheduleError, parse_schedule

    try:
        return parse_schedule(schedule)
    except ScheduleError as err:
        raise ToolError(str(err)) from None


def _deliveries(targets: list[str] | None) -> list[str]:
    from hermes_core.scheduler import check_delivery

    try:
        return [check_delivery(t) for t in targets or []]
    except ValueError as err:
        raise ToolError(str(err)) from None


def _check_tool(context: CallContext, tool: str, arguments: dict[str, Any]) -> None:
    from hermes_core.scheduler import JOB_EXCLUDED_TOOLS

    if tool in JOB_EXCLUDED_TOOLS:
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


def _check_agent(context: CallContext, toolsets: list[str] | None, model: str | None) -> frozenset[str]:
    """The tools an agent job would get (``ToolError`` for an unknown toolset or model)."""
    from hermes_core.scheduler import JOB_EXCLUDED_TOOLS

    host = context.host
    if host is None:
        raise ToolError("agent jobs need a tool system", retryable=False)
    try:
        tools = set(host.available(toolsets))
    except ValueError as err:
        raise ToolError(f"toolsets: {err}") from None
    if context.enabled is not None:
        tools &= context.enabled
    if model is not None:
        from hermes_core.models import model_names

        names = model_names(host)
        if model not in names:
            raise ToolError(f"unknown model {model!r}; configured models: {', '.join(names) or 'none'}")
    return frozenset(tools - JOB_EXCLUDED_TOOLS)


def _approve(context: CallContext, job: Job, tools: frozenset[str]) -> None:
    """A job that may run commands needs a human's yes (or ``[plugins.cronjob] commands = "allow"``)."""
    runs_commands = (job.kind == "tool" and job.tool in COMMAND_TOOLS) or (
        job.kind == "agent" and bool(tools & COMMAND_TOOLS)
    )
    if not runs_commands:
        return
    workspace = str(job.workspace)
    if job.kind == "tool":
        reason = f"schedules a {job.tool} call that will run later, unattended, in {workspace}"
        command = job.arguments.get("command")
        if job.tool == "terminal" and isinstance(command, str):
            verdict = context.classify_command(command, workspace)
            if verdict.hardline:
                raise ToolError(f"a job cannot run this command: it is never allowed ({verdict.reason})")
            if verdict.dangerous:
                reason += (
                    f"; the command is dangerous ({verdict.reason}) and will need approval again when it runs"
                )
        subject = (
            f"cron {job.tool} in {workspace}: {json.dumps(job.arguments, sort_keys=True, ensure_ascii=False)}"
        )
    else:
        names = ", ".join(sorted(tools & COMMAND_TOOLS))
        reason = f"schedules an agent that may run commands ({names}) later, unattended, in {workspace}"
        subject = f"cron agent in {workspace}: {job.prompt}"
    try:
        settings = context.plugin_config(TOOLSET)
    except Exception:
        settings = {}
    if isinstance(settings, dict) and settings.get("commands") == "allow":
        return
    context.request_approval(subject, reason, "cron")


def _need_id(job_id: str | None, action: str) -> str:
    if not job_id:
        raise ToolError(f"{action} needs 'job_id' (see action list)")
    return job_id.strip()


def _find(store: JobStore, job_id: str) -> Job:
    job = store.get(job_id)
    if job is None:
        known = ", ".join(j.id for j in store.list_jobs()) or "none"
        raise ToolError(f"no job {job_id!r} (jobs: {known})")
    return job


def cronjob(
    action: str,
    job_id: str | None = None,
    name: str | None = None,
    schedule: str | None = None,
    tool: str | None = None,
    arguments: dict[str, Any] | None = None,
    prompt: str | None = None,
    skills: list[str] | None = None,
    toolsets: list[str] | None = None,
    model: str | None = None,
    deliver: list[str] | None = None,
    catch_up: str | None = None,
    *,
    context: CallContext,
) -> str:
    """Create, list, update, pause, resume, remove, run now, or show the runs of scheduled jobs."""
    store = _store(context)
    if action == "list":
        jobs = store.list_jobs()
        if not jobs:
            return "No scheduled jobs."
        lines = []
        for job in jobs:
            last = store.history(job.id, 1)
            lines.append(job_line(job, last[0] if last else None))
        return f"{len(jobs)} job(s):\n" + "\n".join(lines)
    if action == "runs":
        runs = store.history(job_id.strip() if job_id else None, 20)
        if not runs:
            return "No runs yet."
        return "\n".join(f"{r.job_id} {run_line(r)}" for r in runs)
    if action == "run":
        return _run_now(context, store, _need_id(job_id, action))
    if action == "create":
        return _create(
            context,
            store,
            name,
            schedule,
            tool,
            arguments,
            prompt,
            skills,
            toolsets,
            model,
            deliver,
            catch_up,
        )
    if action not in ("update", "pause", "resume", "remove"):
        raise ToolError(f"unknown action {action!r}")
    job = _find(store, _need_id(job_id, action))
    if job.source == "config":
        raise ToolError(f"job {job.id} comes from the config file ([scheduler.jobs]); change it there")
    if action == "remove":
        store.remove(job.id)
        _wake(context)
        return f"Removed job {job.id} '{job.name}'."
    if action == "pause":
        job.enabled = False
    elif action == "resume":
        from hermes_core.scheduler import latest_slot

        job.enabled = True  # the slots it slept through are skipped: resume counts from now
        job.last_slot = latest_slot(job.schedule, job.anchor, time.time()) or job.last_slot
    else:
        _update(
            context, job, name, schedule, tool, arguments, prompt, skills, toolsets, model, deliver, catch_up
        )
    store.save(job)
    _wake(context)
    return f"{action.capitalize()}d job {job_line(job)}"


def _create(
    context: CallContext,
    store: JobStore,
    name: str | None,
    schedule: str | None,
    tool: str | None,
    arguments: dict[str, Any] | None,
    prompt: str | None,
    skills: list[str] | None,
    toolsets: list[str] | None,
    model: str | None,
    deliver: list[str] | None,
    catch_up: str | None,
) -> str:
    from hermes_core.scheduler import Job

    if not (name and schedule):
        raise ToolError("create needs name and schedule, and either tool (+ arguments) or prompt")
    if (
        len(name) > 100
        or len(prompt or "") > 20_000
        or any(len(v or []) > 16 for v in (skills, toolsets, deliver))
    ):
        raise ToolError(
            "too long: name up to 100 characters, prompt 20,000, at most 16 skills/toolsets/targets"
        )
    if (tool is None) == (prompt is None):
        raise ToolError("give either 'tool' (+ 'arguments': one call) or 'prompt' (an agent job), not both")
    if prompt is None and (skills or toolsets or model):
        raise ToolError("skills, toolsets and model are for agent jobs (with 'prompt')")
    now = time.time()
    job = Job(
        id=os.urandom(4).hex(),
        name=" ".join(name.split()),
        schedule=_schedule(schedule),
        kind="agent" if prompt is not None else "tool",
        tool=tool,
        arguments=dict(arguments or {}),
        prompt=prompt,
        model=model,
        toolsets=list(toolsets) if toolsets else None,
        skills=list(skills or []),
        deliver=_deliveries(deliver),
        catch_up=catch_up,
        workspace=str(Path(context.workspace).resolve()),
        selection=sorted(context.enabled) if context.enabled is not None else None,
        creator={"session": context.session_id, "call": context.call_id, "at": now},
        created_at=now,
        anchor=int(now),
    )
    _vet(context, job)
    try:
        store.add(job, limit=MAX_JOBS)
    except ValueError as err:
        raise ToolError(str(err)) from None
    _wake(context)
    return f"Created job {job_line(job)}"


def _vet(context: CallContext, job: Job) -> None:
    if job.kind == "tool":
        assert job.tool is not None
        _check_tool(context, job.tool, job.arguments)
        _approve(context, job, frozenset())
    else:
        tools = _check_agent(context, job.toolsets, job.model)
        _approve(context, job, tools)


def _update(
    context: CallContext,
    job: Job,
    name: str | None,
    schedule: str | None,
    tool: str | None,
    arguments: dict[str, Any] | None,
    prompt: str | None,
    skills: list[str] | None,
    toolsets: list[str] | None,
    model: str | None,
    deliver: list[str] | None,
    catch_up: str | None,
) -> None:
    given = (name, schedule, tool, arguments, prompt, skills, toolsets, model, deliver, catch_up)
    if all(v is None for v in given):
        raise ToolError(
            "update needs at least one field to change (name, schedule, tool, arguments, prompt...)"
        )
    if name is not None:
        job.name = " ".join(name.split())
    if schedule is not None:
        job.schedule = _schedule(schedule)
        job.anchor, job.last_slot = int(time.time()), None
    if deliver is not None:
        job.deliver = _deliveries(deliver)
    if catch_up is not None:
        job.catch_up = catch_up
    if job.kind == "tool" and (prompt is not None or skills is not None or toolsets is not None or model):
        raise ToolError("this is a tool job: prompt, skills, toolsets and model are for agent jobs")
    if job.kind == "agent" and (tool is not None or arguments is not None):
        raise ToolError("this is an agent job: change its prompt, not a tool")
    changed = any(v is not None for v in (tool, arguments, prompt, skills, toolsets, model))
    job.tool = tool if tool is not None else job.tool
    job.arguments = dict(arguments) if arguments is not None else job.arguments
    job.prompt = prompt if prompt is not None else job.prompt
    job.skills = list(skills) if skills is not None else job.skills
    job.toolsets = list(toolsets) if toolsets is not None else job.toolsets
    job.model = model if model is not None else job.model
    if changed:
        _vet(context, job)


def _run_now(context: CallContext, store: JobStore, job_id: str) -> str:
    from hermes_core.scheduler import Scheduler

    host = context.host
    if host is None:
        raise ToolError("no tool system is available to run the job")
    job = _find(store, job_id)
    try:
        run = Scheduler(host, store=store).run_now(job.id)
    except RuntimeError as err:
        raise ToolError(str(err)) from None
    return f"Ran job {job.id} ({job.tool or 'agent'}): {run.status}\n{_cut(run.output)}"


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="cronjob",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=cronjob,
        emoji="⏰",
        max_result_size_chars=30_000,
    )
