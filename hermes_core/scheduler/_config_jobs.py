"""Jobs declared in the config (``[scheduler.jobs.NAME]``), kept in the store as ``config-NAME``.

```toml
[scheduler.jobs.digest]
schedule = "cron:0 7 * * *"
prompt = "Summarise what changed in the repository yesterday."
skills = ["git-digest"]          # loaded into the prompt (skill_view)
toolsets = ["hermes-core"]       # default: [scheduler] toolsets, else [agent] toolsets
model = "local"                  # default: [scheduler] model, else [models] default
deliver = ["file:digests/{date}.md", "telegram"]
```

A tool job names ``tool`` and ``arguments`` instead of ``prompt``. Jobs run in ``workspace`` (default: the
host's workspace) with the host's selection. Syncing keeps the anchor and last slot of a job whose schedule did
not change, and removes config jobs that left the config.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ._run import check_delivery
from ._schedule import parse_schedule
from ._store import Job

if TYPE_CHECKING:
    from ..host import Host
    from ._store import JobStore

__all__ = ["config_jobs", "sync_config_jobs"]

PREFIX = "config-"


def _strings(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ValueError(f"{what} must be a string or a list of strings")


def config_jobs(system: Host) -> list[Job]:
    """The jobs ``[scheduler.jobs]`` declares (``ValueError`` naming the job for a bad one)."""
    settings = system.config.data.get("scheduler") or {}
    declared = settings.get("jobs") or {}
    jobs = []
    for name, spec in declared.items():
        where = f"[scheduler.jobs.{name}]"
        try:
            schedule = parse_schedule(str(spec.get("schedule", "")))
            prompt, tool = spec.get("prompt"), spec.get("tool")
            if (prompt is None) == (tool is None):
                raise ValueError("give either prompt (an agent job) or tool (a tool call)")
            deliver = [check_delivery(t) for t in _strings(spec.get("deliver"), "deliver")]
            catch_up = spec.get("catch_up")
            if catch_up not in (None, "once", "skip"):
                raise ValueError("catch_up must be 'once' or 'skip'")
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        workspace = spec.get("workspace") or str(system.workspace)
        jobs.append(
            Job(
                id=PREFIX + name,
                name=name,
                schedule=schedule,
                kind="agent" if prompt is not None else "tool",
                tool=tool,
                arguments=dict(spec.get("arguments") or {}),
                prompt=prompt,
                model=spec.get("model"),
                toolsets=_strings(spec.get("toolsets"), "toolsets") if "toolsets" in spec else None,
                skills=_strings(spec.get("skills"), "skills"),
                max_turns=spec.get("max_turns"),
                deliver=deliver,
                catch_up=catch_up,
                enabled=bool(spec.get("enabled", True)),
                workspace=str(workspace),
                selection=None,
                creator={"source": "config", "file": str(system.config.path or "")},
                source="config",
            )
        )
    return jobs


def sync_config_jobs(system: Host, store: JobStore) -> list[Job]:
    """Make the store's ``config-*`` jobs match the config; returns the declared jobs."""
    now = time.time()
    declared = config_jobs(system)
    stored = {j.id: j for j in store.list_jobs() if j.source == "config"}
    for job in declared:
        old = stored.pop(job.id, None)
        if old is not None and old.schedule == job.schedule:
            job.anchor, job.last_slot, job.created_at = old.anchor, old.last_slot, old.created_at
        else:
            job.anchor, job.created_at = int(now), now
        if old is None or old != job:
            store.put(job)
    for gone in stored:
        store.remove(gone)
    return declared
