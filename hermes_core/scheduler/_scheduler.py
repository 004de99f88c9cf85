"""``Scheduler``: finds the due slots of the stored jobs, claims each in the store and runs the ones it won.

One pass (``run_pending``): runs whose scheduler died are marked abandoned; for each enabled job, the latest slot
at or before now that is newer than the job's ``last_slot`` is due. A due slot is run when this scheduler inserts
its run row (``INSERT ... ON CONFLICT DO NOTHING`` on ``(job, slot)``): exactly one process wins it. Missed slots
never run one by one: with catch-up ``once`` (the default) the latest of them runs once, late; with ``skip`` a
slot more than ``grace`` seconds late is recorded as ``skipped`` instead. A job whose previous run is still
going skips the slot (recorded). Runs go to a pool of ``max_concurrent`` threads; their leases are renewed on
a third of the lease while they run.

``start()`` runs passes on a daemon thread: it sleeps until the next slot of a known job, at most ``tick``
seconds (jobs made by other processes are seen within a tick), and wakes at once on ``wake()``.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._log import get_logger
from ._run import execute_job
from ._schedule import count_slots, latest_slot, next_slot
from ._store import Job, JobStore, Run, new_owner

if TYPE_CHECKING:
    from ..host import Host

__all__ = ["CATCH_UP", "Scheduler", "SchedulerSettings"]

log = get_logger("hermes.scheduler")

CATCH_UP = ("once", "skip")
Clock = Callable[[], float]


class SchedulerSettings:
    """``[scheduler]`` of the config: ``catch_up`` (once | skip), ``grace`` (s a slot may be late under skip),
    ``tick`` (longest sleep, s), ``max_concurrent`` (runs at once per process), ``lease`` (s a run's claim
    lasts without renewal)."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        data = data or {}
        self.catch_up = str(data.get("catch_up", "once"))
        if self.catch_up not in CATCH_UP:
            raise ValueError(f"[scheduler] catch_up must be 'once' or 'skip', got {self.catch_up!r}")
        self.grace = float(data.get("grace", 60.0))
        self.tick = float(data.get("tick", 15.0))
        self.max_concurrent = max(1, int(data.get("max_concurrent", 4)))
        self.lease = float(data.get("lease", 300.0))
        if self.tick <= 0 or self.lease < 3 * self.tick:
            raise ValueError("[scheduler] tick must be positive and lease at least three ticks")


class Scheduler:
    """Runs the jobs of ``store`` (default: the system's) through ``system``.

    ``clock`` (UNIX seconds) is injectable for tests; ``on_run`` sees every finished (or skipped) ``Run``.
    Options left None come from ``[scheduler]`` of the system's config.
    """

    def __init__(
        self,
        system: Host,
        *,
        store: JobStore | None = None,
        clock: Clock = time.time,
        tick: float | None = None,
        lease: float | None = None,
        catch_up: str | None = None,
        grace: float | None = None,
        max_concurrent: int | None = None,
        on_run: Callable[[Run], None] | None = None,
    ) -> None:
        raw = system.config.data.get("scheduler")
        settings = SchedulerSettings(raw if isinstance(raw, dict) else None)
        self.system = system
        self._store = store
        self.clock = clock
        self.tick = tick if tick is not None else settings.tick
        self.lease = lease if lease is not None else settings.lease
        self.catch_up = catch_up or settings.catch_up
        self.grace = grace if grace is not None else settings.grace
        self.max_concurrent = max_concurrent or settings.max_concurrent
        self.on_run = on_run
        self.owner = new_owner()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: cf.ThreadPoolExecutor | None = None
        self._inflight: dict[int, cf.Future[Run | None]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Scheduler {self.owner} running={self.running}>"

    @property
    def store(self) -> JobStore:
        if self._store is None:
            self._store = JobStore.for_system(self.system)
        return self._store

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the background loop -----------------------------------------------------------------------------------

    def start(self) -> Scheduler:
        """Run passes on a daemon thread until ``stop()`` (the store is opened there, not here)."""
        if self.running:
            return self
        self._stop.clear()
        wakers: list[Callable[[], None]] = self.system.stash(
            "scheduler.wakers", list, cleanup=lambda _w: None
        )
        wakers.append(self.wake)
        self._thread = threading.Thread(target=self._loop, name="hermes-scheduler", daemon=True)
        self._thread.start()
        return self

    def wake(self) -> None:
        """Look at the jobs now (a job was added or changed)."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop; runs still going get ``timeout`` seconds to finish (their leases then lapse)."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        pool = self._pool
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
            deadline = time.monotonic() + timeout
            for future in list(self._inflight.values()):
                try:
                    future.result(max(0.0, deadline - time.monotonic()))
                except Exception:
                    pass

    def _loop(self) -> None:
        from ._config_jobs import sync_config_jobs

        try:
            sync_config_jobs(self.system, self.store)
        except Exception as err:  # a bad [scheduler.jobs] entry: the other jobs still run
            log.error("scheduler: the config's jobs were not synced: %s", err)
        while not self._stop.is_set():
            wait = self.tick
            try:
                self.run_pending(wait=False)
                upcoming = self._next_due()
                if upcoming is not None:
                    wait = min(wait, max(0.0, upcoming - self.clock()))
            except Exception:  # a store that is down: log and try again next tick
                log.exception("scheduler pass failed; retrying in %.0f s", self.tick)
            self._wake.wait(max(wait, 0.01))
            self._wake.clear()

    def _next_due(self) -> float | None:
        now = self.clock()
        times = [
            next_slot(job.schedule, job.anchor, max(now, float(job.last_slot or job.anchor)))
            for job in self.store.list_jobs(enabled_only=True)
        ]
        return min(times) if times else None

    # -- passes ------------------------------------------------------------------------------------------------

    def run_pending(self, now: float | None = None, *, wait: bool = True) -> list[Run]:
        """One pass at ``now`` (default: the clock): claim the due slots and run them.

        With ``wait`` the runs finish before it returns and every run this pass made (skipped ones too) is
        returned; without, the runs go on in the pool and only the skipped slots are returned.
        """
        store = self.store
        when = self.clock() if now is None else float(now)
        store.reap(when)
        made: list[Run] = []
        futures: list[cf.Future[Run | None]] = []
        for job in store.list_jobs(enabled_only=True):
            if self._stop.is_set() and not wait:
                break
            slot = latest_slot(job.schedule, job.anchor, when)
            if slot is None or (job.last_slot is not None and slot <= job.last_slot):
                continue
            if len(self._inflight) >= self.max_concurrent:
                break  # the rest stays due: another process, or this one's next pass, takes it
            skipped = self._take(job, slot, when)
            if isinstance(skipped, Run):
                made.append(skipped)
            elif skipped is not None:
                futures.append(skipped)
        if wait:
            for future in futures:
                run = future.result()
                if run is not None:
                    made.append(run)
        return made

    def _take(self, job: Job, slot: int, now: float) -> Run | cf.Future[Run | None] | None:
        store = self.store
        after = job.last_slot if job.last_slot is not None else job.anchor
        due = max(1, count_slots(job.schedule, job.anchor, after, slot))
        policy = job.catch_up or self.catch_up
        reason = None
        if policy == "skip" and now - slot > self.grace:
            reason = f"{due} slot(s) missed by {now - slot:.0f} s; catch-up is 'skip'"
        elif store.is_running(job.id, now):
            reason = "the previous run was still going"
        session = f"cron-{job.id}-{slot}"
        if reason is not None:
            run_id = store.claim_slot(
                job.id, slot, self.owner, now, self.lease, missed=due, status="skipped", output=reason
            )
            store.advance(job.id, slot)
            run = store.run(run_id) if run_id is not None else None
            if run is not None:
                self._notify(run)
            return run
        run_id = store.claim_slot(
            job.id, slot, self.owner, now, self.lease, missed=due - 1, session_id=session
        )
        store.advance(job.id, slot)
        if run_id is None:
            return None  # another scheduler won this slot
        return self._submit(run_id, job, slot, session)

    def _submit(self, run_id: int, job: Job, slot: float, session: str) -> cf.Future[Run | None]:
        with self._lock:
            if self._pool is None:
                self._pool = cf.ThreadPoolExecutor(self.max_concurrent, thread_name_prefix="hermes-job")
            future = self._pool.submit(self._execute, run_id, job, slot, session)
            self._inflight[run_id] = future
        future.add_done_callback(lambda _f: self._inflight.pop(run_id, None))
        return future

    def _execute(self, run_id: int, job: Job, slot: float, session: str) -> Run | None:
        started = time.perf_counter()
        done = threading.Event()
        renewer = threading.Thread(
            target=self._keep_lease, args=(run_id, done), name="hermes-job-lease", daemon=True
        )
        renewer.start()
        try:
            result = execute_job(self.system, job, slot=slot, session_id=session)
        finally:
            done.set()
        duration = (time.perf_counter() - started) * 1000
        if not self.store.finish(run_id, self.owner, result.status, result.output(), self.clock(), duration):
            log.warning("run %s of job %s finished after its lease was taken over", run_id, job.id)
        run = self.store.run(run_id)
        if run is not None:
            self._notify(run)
        return run

    def _keep_lease(self, run_id: int, done: threading.Event) -> None:
        """Renew one run's lease every third of it while the run goes on."""
        while not done.wait(self.lease / 3):
            try:
                self.store.renew([run_id], self.owner, self.clock() + self.lease)
            except Exception:
                log.exception("could not renew the lease of run %s", run_id)

    def _notify(self, run: Run) -> None:
        if self.on_run is not None:
            try:
                self.on_run(run)
            except Exception:
                log.exception("the scheduler's on_run callback failed (ignored)")

    # -- manual runs -------------------------------------------------------------------------------------------

    def run_now(self, job_id: str) -> Run:
        """Run ``job_id`` now, in this thread, whatever its schedule (``KeyError``: no such job; ``RuntimeError``:
        it is running right now)."""
        job = self.store.get(job_id)
        if job is None:
            raise KeyError(job_id)
        now = self.clock()
        session = f"cron-{job.id}-manual-{int(now)}"
        run_id = self.store.start_manual(job.id, self.owner, now, self.lease, session)
        run = self._execute(run_id, job, now, session)
        assert run is not None
        return run
