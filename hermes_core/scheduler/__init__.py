"""The scheduler: jobs that run on a schedule inside every long-lived hermes process, each due run exactly once.

```python
from hermes_core import ToolSystem
from hermes_core.scheduler import Job, JobStore, Scheduler

system = ToolSystem.load(scheduler=True)        # opt in: a scheduler thread runs the stored jobs
system.scheduler.store.history("a1b2c3d4")      # -> [Run(status, output, duration_ms, ...)]

store = JobStore.for_system(system)             # [scheduler] store, else <data dir>/scheduler/jobs.db
Scheduler(system, clock=my_clock).run_pending() # one pass, for tests and `hermes cron run`
```

A job is a tool call or an agent prompt (``hermes_core.agent.Agent`` with a model, toolsets and skills from its
spec or ``[scheduler]``), run in the workspace it was made in, with the tools its creator had, headless (see
``_run``), its answer delivered to a file, a session or a messaging platform. Jobs come from the ``cronjob`` tool,
from ``[scheduler.jobs.NAME]`` in the config, or from this API.

Exactly once: the store keeps one run per ``(job, slot)`` and a scheduler runs a slot only if it inserted that
row, so ``hermes chat``, ``hermes mcp serve``, ``hermes cron serve`` and any ``ToolSystem`` that opted in may all
run at once on one host (or on several hosts sharing a PostgreSQL store). Missed slots run once (``catch_up =
"once"``) or are skipped past ``grace`` (``"skip"``). Every run is recorded with its status, output and duration
(``hermes cron runs JOB``).

``[scheduler]`` settings: ``in_process`` (unset: the CLI's long-lived commands run a scheduler and library hosts
do not; true: library hosts loading this config do too; false: only ``hermes cron serve``), ``store`` (a URL or
path), ``catch_up``, ``grace``, ``tick``, ``lease``, ``max_concurrent``, and the agent jobs' defaults ``model``,
``toolsets``, ``max_turns``, ``deliver``; ``[scheduler.jobs.NAME]`` declares jobs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._config_jobs import config_jobs, sync_config_jobs
from ._run import AGENT_JOB_PROMPT, JOB_EXCLUDED_TOOLS, JobResult, check_delivery, execute_job
from ._schedule import MIN_INTERVAL, ScheduleError, count_slots, latest_slot, next_slot, parse_schedule
from ._scheduler import CATCH_UP, Scheduler, SchedulerSettings
from ._store import MAX_OUTPUT, Job, JobStore, Run, new_owner

if TYPE_CHECKING:
    from ..host import Host

__all__ = [
    "AGENT_JOB_PROMPT",
    "CATCH_UP",
    "JOB_EXCLUDED_TOOLS",
    "MAX_OUTPUT",
    "MIN_INTERVAL",
    "Job",
    "JobResult",
    "JobStore",
    "Run",
    "ScheduleError",
    "Scheduler",
    "SchedulerSettings",
    "check_delivery",
    "config_jobs",
    "count_slots",
    "execute_job",
    "in_process_wanted",
    "latest_slot",
    "new_owner",
    "next_slot",
    "parse_schedule",
    "sync_config_jobs",
]


def in_process_wanted(system: Host, default: bool) -> bool:
    """Whether a host should run a scheduler: ``[scheduler] in_process`` when set, else ``default``."""
    settings: Any = system.config.data.get("scheduler") or {}
    value = settings.get("in_process") if isinstance(settings, dict) else None
    return default if value is None else bool(value)
