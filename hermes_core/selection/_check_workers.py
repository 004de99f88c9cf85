"""The threads that run availability checks: as few as keep every check moving.

Starting a thread per check costs more than most checks do: twenty checks started at once made the first
``definitions()`` of a process wait ~20 ms on thread starts and GIL hand-offs between checks that mostly import
modules (CPU-bound work that threads do not speed up). So checks queue for a small set of daemon workers that
grows only when it must: a job finds an idle worker, else a new worker starts when none runs yet or when every
worker has been busy with one check for longer than ``stuck_after`` (a check that waits on a socket or a child
process does not hold the others up for longer than that). Whoever waits for a verdict calls :meth:`rescue`
every ``stuck_after`` seconds, so a hanging check never delays the checks queued behind it by more than that.
Idle workers end after ``idle_seconds``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["CheckWorkers"]

_monotonic = time.monotonic


class CheckWorkers:
    """A queue of check jobs and the daemon threads that run them (see the module docstring)."""

    def __init__(self, stuck_after: float = 0.05, idle_seconds: float = 2.0) -> None:
        self.stuck_after = stuck_after
        self.idle_seconds = idle_seconds
        self._jobs: deque[Callable[[], None]] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._idle = 0  # workers waiting for a job
        self._busy_since: dict[int, float] = {}  # worker id -> when it took its current job
        self._next_id = 0
        self._closed = False

    def submit(self, job: Callable[[], None]) -> None:
        """Queue ``job`` (which must not raise); it runs on a worker, a new one when none can take it soon."""
        with self._cond:
            self._jobs.append(job)
            if self._idle > len(self._jobs) - 1:
                self._cond.notify()
                return
            start = self._must_grow()
        if start:
            self._start()

    def rescue(self) -> None:
        """Start a worker when jobs wait and every worker is stuck in a long check (waiters call this)."""
        with self._cond:
            start = bool(self._jobs) and self._idle == 0 and self._must_grow()
        if start:
            self._start()

    def close(self) -> None:
        """Let the workers go: idle ones end now, busy ones once no job is left in the queue."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _must_grow(self) -> bool:
        """Under the lock: whether no worker runs, or every one has been busy for ``stuck_after`` or more."""
        if not self._busy_since:
            return True
        now = _monotonic()
        return all(now - since >= self.stuck_after for since in self._busy_since.values())

    def _start(self) -> None:
        with self._cond:
            worker = self._next_id
            self._next_id += 1
            self._busy_since[worker] = _monotonic()  # counted as busy until it takes its first job
        threading.Thread(target=self._work, args=(worker,), name="hermes-check", daemon=True).start()

    def _work(self, worker: int) -> None:
        cond = self._cond
        while True:
            with cond:
                if not self._jobs:
                    del self._busy_since[worker]
                    self._idle += 1
                    deadline = _monotonic() + self.idle_seconds
                    while not self._jobs and not self._closed:
                        left = deadline - _monotonic()
                        if left <= 0 or not cond.wait(left):
                            break
                    self._idle -= 1
                    if not self._jobs:
                        return
                job = self._jobs.popleft()
                self._busy_since[worker] = _monotonic()
            try:
                job()
            except BaseException:  # a job that ends its thread must not leave its worker counted as busy
                with cond:
                    self._busy_since.pop(worker, None)
                raise
