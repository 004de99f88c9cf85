"""The kanban board's library API and its dispatcher: ready tasks handed to sub-agents, a few at a time.

```python
from hermes_builtin.kanban import Board, Dispatcher
board = Board.for_system(system)                    # [plugins.kanban] store, else <data dir>/kanban/board.db
board.create("Write the release notes", created_by="me", depends_on=[3])
report = Dispatcher(system, concurrency=2).run()     # until nothing is ready and nothing runs
report.completed, report.blocked                     # task ids
```

The dispatcher claims the most urgent ready task (dependencies done, nobody holding a live lease), starts a
sub-agent for it with delegate_task's machinery (``agents.make_subagent``: its own conversation, the sub-agent
prompt, the tools of ``toolsets`` without ``clarify`` and ``delegate_task``, ``[plugins.agents]`` turn budget),
and keeps the claim alive with heartbeats while it works. The sub-agent is the claim's owner (its session id) and
holds the fencing token in its session, so its own ``kanban_*`` calls (comments, attachments, even completing or
blocking the task) carry the claim. When it ends without having done so, the dispatcher completes the task with
its report, or blocks it with the reason it stopped. At most ``concurrency`` sub-agents run at once (default
``[plugins.agents] max_concurrency``); a task whose dependency finishes during the run is picked up as soon as it
is ready. Several dispatchers (processes, hosts sharing a PostgreSQL board) never take the same task.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .tools.work._board import Board, BoardError, ClaimLost
from .tools.work._board_terms import DEFAULT_LEASE
from .tools.work.kanban import CLAIMS_KEY

if TYPE_CHECKING:
    from collections.abc import Callable

    from hermes_core import Host
    from hermes_core.agent import AgentResult

__all__ = ["WORKER_PROMPT", "Board", "BoardError", "ClaimLost", "DispatchReport", "Dispatcher"]

log = logging.getLogger("hermes.kanban")

WORKER_PROMPT = (
    "You are a worker agent: a dispatcher gave you one task of a shared kanban board and claimed it for you. Work "
    "on it with your tools in the folder {workspace}. Nobody can answer questions, so decide sensibly and say what "
    "you assumed. You may note progress with kanban_comment and attach files with kanban_attach; if you cannot "
    "finish, call kanban_block with what is missing. Finish with a short report of what you did and where the "
    "results are: it becomes the task's result."
)


@dataclass
class DispatchReport:
    """What one ``Dispatcher.run`` did: task ids completed and blocked, and each task's worker session."""

    completed: list[int] = field(default_factory=list)
    blocked: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    sessions: dict[int, str] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)  # task ids in the order they were claimed


class Dispatcher:
    """Hands the ready tasks of ``board`` (default: the system's) to sub-agents of ``system``.

    ``concurrency`` caps sub-agents at once, ``lease`` is each claim's lease (renewed every third of it),
    ``toolsets``/``model``/``max_turns`` shape the sub-agents, ``name`` prefixes their session ids.
    """

    def __init__(
        self,
        system: Host,
        *,
        board: Board | None = None,
        concurrency: int | None = None,
        lease: float | None = None,
        toolsets: list[str] | None = None,
        model: str | None = None,
        max_turns: int | None = None,
        name: str = "kanban",
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        from .tools.work.agents import subagent_limits

        default_concurrency, default_turns = subagent_limits(system)
        settings = system.plugin_config("kanban")
        self.system = system
        self.board = board if board is not None else Board.for_system(system)
        self.concurrency = max(1, concurrency or default_concurrency)
        self.lease = float(lease or settings.get("lease") or DEFAULT_LEASE)
        self.toolsets = toolsets
        self.model = model
        self.max_turns = max_turns or default_turns
        self.name = name
        self.on_event = on_event
        self._stop = threading.Event()

    def stop(self) -> None:
        """Claim nothing more; ``run`` returns once the running sub-agents finish."""
        self._stop.set()

    def _say(self, text: str) -> None:
        log.info("%s", text)
        if self.on_event is not None:
            self.on_event(text)

    def run(self, *, max_tasks: int | None = None, wait: bool = False, poll: float = 2.0) -> DispatchReport:
        """Dispatch until nothing is ready and nothing runs (or ``max_tasks`` were claimed); with ``wait``, keep
        looking every ``poll`` seconds for new ready tasks until ``stop()``."""
        from .tools.work.agents import subagent_tools

        allowed = subagent_tools(self.system, self.toolsets)
        report = DispatchReport()
        running: dict[cf.Future[AgentResult], tuple[int, int, str]] = {}
        fences: dict[int, tuple[str, int]] = {}
        beat_stop = threading.Event()
        beat = threading.Thread(target=self._heartbeats, args=(fences, beat_stop), daemon=True)
        beat.start()
        pool = cf.ThreadPoolExecutor(self.concurrency, thread_name_prefix="hermes-kanban-worker")
        try:
            while True:
                while len(running) < self.concurrency and not self._stop.is_set():
                    if max_tasks is not None and len(report.order) >= max_tasks:
                        break
                    started = self._start_next(pool, allowed, report)
                    if started is None:
                        break
                    future, task_id, fence, session = started
                    running[future] = (task_id, fence, session)
                    fences[task_id] = (session, fence)
                if not running:
                    if not wait or self._stop.is_set():
                        return report
                    self._stop.wait(poll)
                    continue
                done, _ = cf.wait(list(running), timeout=poll, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    task_id, fence, session = running.pop(future)
                    fences.pop(task_id, None)
                    self._finish(task_id, fence, session, future, report)
        finally:
            beat_stop.set()
            pool.shutdown(wait=True)

    def _start_next(
        self, pool: cf.ThreadPoolExecutor, allowed: frozenset[str], report: DispatchReport
    ) -> tuple[cf.Future[AgentResult], int, int, str] | None:
        from hermes_core.models import ModelConfigError

        from .tools.work.agents import make_subagent

        session = f"{self.name}-worker-{uuid.uuid4().hex[:8]}"
        got = self.board.claim_next(session, self.lease)
        if got is None:
            return None
        task, fence = got
        task_id = int(task["id"])
        # the sub-agent's own kanban_* calls carry this claim
        claims: dict[tuple[str, int], int] = self.system.session(session).stash(
            CLAIMS_KEY, dict, cleanup=lambda _c: None
        )
        claims[(self.board.url, task_id)] = fence
        try:
            agent = make_subagent(
                self.system,
                allowed,
                self.max_turns,
                session_id=session,
                model=self.model,
                system_prompt=WORKER_PROMPT.replace("{workspace}", str(self.system.workspace)),
            )
        except ModelConfigError as err:
            self.board.release(task_id, session, fence)
            raise BoardError(f"no model for the workers: {err}") from None
        report.order.append(task_id)
        report.sessions[task_id] = session
        self._say(f"#{task_id} {task['title']}: started (session {session})")
        return pool.submit(agent.run, _task_prompt(task)), task_id, fence, session

    def _finish(
        self, task_id: int, fence: int, session: str, future: cf.Future[AgentResult], report: DispatchReport
    ) -> None:
        try:
            result = future.result()
            ok, text = result.ok, result.text.strip()
            why = result.error or result.stop_reason
        except Exception as err:  # a worker that broke is reported, the others go on
            ok, text, why = False, "", f"{type(err).__name__}: {err}"
        try:
            task = self.board.get(task_id)
            if task["owner"] != session or task["fence"] != fence:
                # the worker completed or blocked the task itself (or lost the claim): nothing left to do
                target = report.completed if task["status"] == "done" else report.blocked
                if task["status"] in ("done", "blocked"):
                    target.append(task_id)
                else:
                    report.lost.append(task_id)
                self._say(f"#{task_id}: {task['status']} (by its worker)")
                return
            if ok:
                self.board.complete(task_id, session, fence, text or "(no report)")
                report.completed.append(task_id)
                self._say(f"#{task_id}: done")
            else:
                self.board.block(task_id, session, f"the worker stopped: {why}", fence)
                report.blocked.append(task_id)
                self._say(f"#{task_id}: blocked ({why})")
        except ClaimLost:
            report.lost.append(task_id)
            self._say(f"#{task_id}: the claim was lost (its lease ran out and another worker took it)")
        finally:
            self.system.close_session(session)

    def _heartbeats(self, fences: dict[int, tuple[str, int]], stop: threading.Event) -> None:
        while not stop.wait(self.lease / 3):
            for task_id, (session, fence) in list(fences.items()):
                try:
                    self.board.heartbeat(task_id, session, fence, self.lease)
                except BoardError as err:
                    log.warning("heartbeat of task #%s failed: %s", task_id, err)


def _task_prompt(task: dict[str, Any]) -> str:
    text = f"Task #{task['id']}: {task['title']}"
    if task.get("description"):
        text += f"\n\n{task['description']}"
    return text + f"\n\n(claimed for you at {time.strftime('%H:%M:%S UTC', time.gmtime())})"
