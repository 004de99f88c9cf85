"""Running one job: a tool call or an agent prompt, in the job's workspace, headless, then its delivery.

Every call a job makes goes through the system's pipeline inside ``calls_in_workspace(job.workspace)`` (file
tools, guards and the sandbox see the job's workspace, not the host's) and ``calls_approved_by(headless)``:
nobody is asked, whatever the host's own approver, so anything that needs approval is denied unless a standing
approval allows it. A job may only use the tools its creator could (``selection``); an agent job never gets
``clarify`` (nobody answers) nor ``cronjob`` (a job does not schedule jobs).

Delivery targets (``Job.deliver``), each a string:

- ``file:PATH``: the answer is written (atomically) to PATH inside the job's workspace; ``{date}``, ``{time}``
  and ``{job}`` in PATH are filled in from the slot (UTC). The path guard must allow the write outright.
- ``session:NAME``: the answer is recorded as an assistant message of session NAME in the session store (the
  ``on_agent_message`` hook, which the built-ins index for ``session_search``). An agent job's whole
  conversation is recorded under its own session id in any case.
- ``telegram``, ``discord``, ``slack`` (optionally ``:TARGET``): sent through the ``send_message`` tool, which
  must be configured.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._log import get_logger
from ..context import calls_approved_by, calls_in_workspace

if TYPE_CHECKING:
    from ..host import Host
    from ._store import Job

__all__ = [
    "AGENT_JOB_PROMPT",
    "JOB_EXCLUDED_TOOLS",
    "JobResult",
    "check_delivery",
    "execute_job",
]

JOB_EXCLUDED_TOOLS = frozenset({"clarify", "cronjob"})
PLATFORMS = ("telegram", "discord", "slack")
AGENT_JOB_PROMPT = (
    "You are running a scheduled job named {name!r}, unattended: nobody can answer questions or approve "
    "anything, so decide sensibly and say what you assumed. Work with your tools in the folder {workspace}. "
    "Finish with the answer itself (a report, a summary, a message): it is delivered as you write it."
)
DEFAULT_AGENT_TURNS = 20


@dataclass
class JobResult:
    """How a run ended: ``status`` (ok, error, denied, blocked), the answer or result ``text``, where it went."""

    status: str
    text: str
    delivered: list[str] = field(default_factory=list)

    def output(self) -> str:
        if not self.delivered:
            return self.text
        return self.text + "\n\n[" + "; ".join(self.delivered) + "]"


def check_delivery(target: str) -> str:
    """The normalized delivery target; ``ValueError`` with what to write when it is not one."""
    text = target.strip()
    kind, _, rest = text.partition(":")
    kind = kind.lower()
    if kind == "file":
        if not rest.strip():
            raise ValueError("file delivery needs a path: file:reports/{date}.md")
        return f"file:{rest.strip()}"
    if kind == "session":
        if not rest.strip():
            raise ValueError("session delivery needs a session id: session:daily-digest")
        return f"session:{rest.strip()}"
    if kind in PLATFORMS:
        return f"{kind}:{rest.strip()}" if rest.strip() else kind
    raise ValueError(
        f"unknown delivery {target!r}: use file:PATH, session:ID, or telegram/discord/slack[:TARGET]"
    )


def _settings(system: Host) -> dict[str, Any]:
    value = system.config.data.get("scheduler")
    return value if isinstance(value, dict) else {}


def execute_job(system: Host, job: Job, *, slot: float, session_id: str) -> JobResult:
    """Run ``job`` once through ``system`` (never raises) and deliver its answer when it succeeded."""
    from ..security import HeadlessApprover

    workspace = job.workspace
    if not workspace:
        return JobResult("error", "this job has no recorded workspace; remove and re-create it")
    if not Path(workspace).is_dir():
        return JobResult("error", f"the job's workspace {workspace} no longer exists")
    try:
        with calls_in_workspace(workspace), calls_approved_by(HeadlessApprover()):
            if job.kind == "agent":
                result = _agent_job(system, job, session_id)
            else:
                result = _tool_job(system, job, session_id)
            if result.status == "ok":
                _deliver(system, job, result, slot)
        return result
    except Exception as err:  # a job must never take its scheduler down
        get_logger("hermes.scheduler").exception("job %s failed", job.id)
        return JobResult("error", f"the scheduler could not run the job: {type(err).__name__}: {err}")
    finally:
        system.close_session(session_id)  # each run starts fresh: its environment and processes end here


def _enabled(job: Job) -> tuple[str, ...] | None:
    return tuple(job.selection) if job.selection is not None else None


def _tool_job(system: Host, job: Job, session_id: str) -> JobResult:
    if not job.tool:
        return JobResult("error", "this job names no tool")
    if job.tool in JOB_EXCLUDED_TOOLS:
        return JobResult("error", f"a job cannot call {job.tool!r}")
    outcome = system.call_outcome(
        job.tool, dict(job.arguments or {}), enabled=_enabled(job), session_id=session_id
    )
    return JobResult(outcome.status, outcome.result)


def _skill_text(system: Host, job: Job, session_id: str) -> str | JobResult:
    parts = []
    for name in job.skills:
        outcome = system.call_outcome(
            "skill_view", {"name": name}, enabled=_enabled(job), session_id=session_id
        )
        if not outcome.ok:
            return JobResult("error", f"skill {name!r} could not be loaded: {outcome.result}")
        parts.append(f"## Skill: {name}\n\n{outcome.result.strip()}")
    return "\n\n".join(parts)


def _agent_job(system: Host, job: Job, session_id: str) -> JobResult:
    from ..agent import Agent
    from ..models import ModelConfigError
    from ..selection import UnknownToolsetError

    settings = _settings(system)
    toolsets = job.toolsets if job.toolsets is not None else settings.get("toolsets")
    try:
        available = system.available(toolsets)
    except UnknownToolsetError as err:
        return JobResult("error", f"the job's toolsets: {err}")
    allowed = set(available) - JOB_EXCLUDED_TOOLS
    if job.selection is not None:
        allowed &= set(job.selection)
    skills = _skill_text(system, job, session_id)
    if isinstance(skills, JobResult):
        return skills
    workspace = str(job.workspace)
    prompt = AGENT_JOB_PROMPT.format(name=job.name, workspace=workspace)
    turns = job.max_turns or int(settings.get("max_turns") or DEFAULT_AGENT_TURNS)
    try:
        agent = Agent(
            system,
            model=job.model or settings.get("model"),
            toolsets=toolsets,
            allowed_tools=frozenset(allowed),
            system_prompt=prompt,
            max_turns=turns,
            session_id=session_id,
        )
    except ModelConfigError as err:
        return JobResult("error", f"no model for this job: {err}")
    task = f"{skills}\n\n## Task\n\n{job.prompt}" if skills else str(job.prompt)
    result = agent.run(task)
    if result.stop_reason == "done":
        return JobResult("ok", result.text.strip() or "(the model gave no answer)")
    if result.stop_reason == "max_turns":
        return JobResult(
            "error", f"stopped after {result.turns} model turns (the job's budget): {result.text}"
        )
    return JobResult("error", f"the agent ended with {result.stop_reason}: {result.error or result.text}")


# -- delivery -------------------------------------------------------------------------------------------------


def _deliver(system: Host, job: Job, result: JobResult, slot: float) -> None:
    targets = list(job.deliver) or _default_delivery(system)
    failures = []
    for target in targets:
        try:
            result.delivered.append(_deliver_one(system, job, target, result.text, slot))
        except Exception as err:
            failures.append(f"{target}: {err}")
    if failures:
        result.status = "error"
        result.delivered.append("delivery failed: " + "; ".join(failures))


def _default_delivery(system: Host) -> list[str]:
    value = _settings(system).get("deliver")
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value] if isinstance(value, list) else []


def _deliver_one(system: Host, job: Job, target: str, text: str, slot: float) -> str:
    kind, _, rest = check_delivery(target).partition(":")
    if kind == "file":
        return _to_file(job, rest, text, slot)
    if kind == "session":
        message = {"role": "assistant", "content": f"[scheduled job {job.name}] {text}"}
        system.hooks.call("on_agent_message", system=system, session_id=rest, message=message)
        return f"recorded in session {rest}"
    arguments: dict[str, Any] = {"platform": kind, "text": text}
    if rest:
        arguments["target"] = rest
    outcome = system.call_outcome("send_message", arguments, enabled=("send_message",))
    if not outcome.ok:
        raise RuntimeError(outcome.result)
    return f"sent to {kind}{':' + rest if rest else ''}"


def _to_file(job: Job, template: str, text: str, slot: float) -> str:
    from ..fileio import atomic_write
    from ..security import check_path

    stamp = time.gmtime(slot)
    rel = template.replace("{date}", time.strftime("%Y-%m-%d", stamp))
    rel = rel.replace("{time}", time.strftime("%H%M", stamp)).replace("{job}", job.id)
    workspace = Path(str(job.workspace)).resolve()
    verdict = check_path(rel, "write", workspace)
    if verdict.decision != "allow" or not verdict.inside_workspace:
        raise PermissionError(f"may not write {rel}: {verdict.reason}")
    path = Path(verdict.resolved)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.rstrip("\n") + "\n")
    return f"written to {path}"
