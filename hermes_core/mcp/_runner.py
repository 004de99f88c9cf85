"""Where ``hermes mcp serve`` runs tool calls: a bounded pool shared fairly by the client sessions.

Every call runs on a worker thread: two compute at once, and while calls wait, a worker blocked in its call is
covered by another, up to ``workers`` (see ``_Workers``). A session runs at most ``session_concurrency`` calls at
once; its further calls wait for one of its own to end, never for other sessions' calls, so one client's long
calls cannot delay another's short ones. Each call runs under a ``CancelToken`` of its own (``hermes_core.cancellation``,
the mechanism the agent loop uses too). A call that the client cancels (``notifications/cancelled``, or a closed
response stream) has its token cancelled: if it was still waiting its turn it never starts, a sync handler is
interrupted (a sandboxed command is killed with its process tree on the way out), an async handler is cancelled.
A call still running after ``max_call_seconds`` is cancelled the same way and answers with an error that says so.
A session's turn is given back when its call's thread is really free.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from .._aio.cancel import CancelToken

__all__ = ["CallRunner", "CallTookTooLong"]

T = TypeVar("T")

_AFTER_LIMIT = 5.0  # seconds a call cancelled for its duration gets to report how it ended
_CORE = 2  # workers that compute at once (see _Workers)
_LOOK = 0.02  # seconds between two looks at the workers while calls wait
_STUCK = 0.1  # seconds without a worker taking a call, while calls wait, after which all count as stuck
# the system calls a thread waits in for a lock (the GIL among them): such a worker may be computing
_LOCK_WAITS = {"x86_64": {"202", "449"}, "aarch64": {"98", "449"}}.get(platform.machine(), set())
_LINGER = 2.0  # seconds a worker beyond the core waits for a call before it ends


class CallTookTooLong(Exception):
    """A call ran past ``max_call_seconds`` and did not end when it was cancelled."""


class _Gate:
    """A session's turns: at most ``size`` calls at once, the rest wait in order (loop-thread only)."""

    __slots__ = ("active", "size", "waiting")

    def __init__(self, size: int) -> None:
        self.size = size
        self.active = 0
        self.waiting: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if self.active < self.size and not self.waiting:
            self.active += 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release()  # the turn came just as the wait was cancelled: pass it on
            else:
                self.waiting.remove(turn)
            raise

    def release(self) -> None:
        while self.waiting:
            turn = self.waiting.popleft()
            if not turn.done():
                turn.set_result(None)  # the turn moves on: ``active`` stays
                return
        self.active -= 1

    @property
    def idle(self) -> bool:
        return self.active == 0 and not self.waiting


class _Workers:
    """Daemon threads fed by one queue, at most ``size``: ``core`` of them that compute and, while calls wait
    (looked at every ``_LOOK`` seconds), one more for each worker blocked in a system call that is not a lock's
    (a sleep, a socket, a subprocess), or ``core`` more when no worker took a call for ``_STUCK`` seconds (all
    stuck: on a lock, or computing for long; so that no call waits long behind others).

    Threads beyond the few that the GIL lets work at once fight over it: 32 workers each running a short call cost
    a fifth more CPU a call than two (context switches, GIL hand-offs; ``bench_mcp.py``, 8 sessions on
    2026-07-28: 0.58x of the SDK's throughput against 0.70x). So short calls that compute queue for the core
    workers, calls that wait on I/O still run side by side, and a worker beyond the core ends after ``_LINGER``
    seconds without a call. A call costs one queue put and one wake-up of the loop when it ends, where
    ``run_in_executor`` on a ``ThreadPoolExecutor`` with ``wait_for`` and ``shield`` around it cost ~85 us more
    (their locks, futures and callbacks are taken on the loop thread, which serves every session's HTTP as well).
    Use from one event loop."""

    def __init__(self, size: int, name: str, core: int = _CORE) -> None:
        self._jobs: queue.SimpleQueue[Callable[[bool], None] | None] = queue.SimpleQueue()
        self._size = size
        self._core = max(1, min(core, size))
        self._name = name
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0  # workers waiting for a job
        self._pending = 0  # jobs queued and not yet taken
        self._running: set[int] = set()  # the workers on a job (their threads' native ids)
        self._last_start = 0.0  # when a worker last took a job
        self._closed = False
        self._timer: asyncio.TimerHandle | None = None

    def submit(self, job: Callable[[bool], None]) -> None:
        """Queue ``job`` (it must not raise; it is told whether to skip its work because the runner closed); a new
        worker starts when the idle ones cannot take it and the core is not full, or later if it waits stuck."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the call runner is closed")
            self._pending += 1
            waits = self._pending > self._idle
            start = waits and self._threads < self._core
            if start:
                self._threads += 1
        self._jobs.put(job)
        if start:
            self._start()
        elif waits and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(_LOOK, self._rescue)

    def _start(self) -> None:
        threading.Thread(target=self._work, name=self._name, daemon=True).start()

    def _rescue(self) -> None:
        """(On the loop.) Jobs still wait: start one worker for each that is blocked, so ``core`` compute, or
        ``core`` more when no worker took a job for ``_STUCK`` seconds."""
        self._timer = None
        now = time.monotonic()
        with self._lock:
            waiting = self._pending - self._idle
            if self._closed or waiting <= 0:
                return
            running = list(self._running)
            stuck = now - self._last_start >= _STUCK
        blocked = sum(1 for tid in running if _blocked(tid))
        with self._lock:
            # an idle worker about to take a job counts as computing: it soon will
            computing = self._threads - blocked
            want = self._core if stuck else self._core - computing
            add = max(0, min(want, waiting, self._size - self._threads))
            self._threads += add
        for _ in range(add):
            self._start()
        self._timer = asyncio.get_running_loop().call_later(_LOOK, self._rescue)

    def close(self) -> None:
        """Workers end; jobs still queued answer that the server is closing instead of running."""
        with self._lock:
            self._closed = True
            count = self._threads
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for _ in range(count):
            self._jobs.put(None)

    def _work(self) -> None:
        lock, jobs, running, me = self._lock, self._jobs, self._running, threading.get_native_id()
        while True:
            with lock:
                running.discard(me)
                self._idle += 1
            try:
                job = jobs.get(timeout=_LINGER)
            except queue.Empty:
                with lock:
                    self._idle -= 1
                    # beyond the core, and no job waits that the other idle workers will not take: end
                    if self._threads > self._core and self._pending <= self._idle:
                        self._threads -= 1
                        return
                continue
            with lock:
                self._idle -= 1
                if job is None:
                    self._threads -= 1
                    return
                self._pending -= 1
                closed = self._closed
                running.add(me)
                self._last_start = time.monotonic()
            job(closed)


def _blocked(tid: int) -> bool:
    """Whether the thread ``tid`` of this process sleeps in a system call other than a lock's (Linux: a thread
    that runs, in the kernel too, reads as "running")."""
    if not _LOCK_WAITS:
        return False
    try:
        fd = os.open(f"/proc/self/task/{tid}/syscall", os.O_RDONLY)
    except OSError:
        return False
    try:
        call = os.read(fd, 32).split(b" ", 1)[0].decode("ascii", "replace")
    except OSError:
        return False
    finally:
        os.close(fd)
    return call.isdigit() and call not in _LOCK_WAITS


class CallRunner:
    """Runs calls for the sessions of one server (see the module docstring). Use from one event loop."""

    def __init__(self, workers: int, session_concurrency: int, max_call_seconds: float) -> None:
        self._workers = _Workers(workers, "hermes-mcp-call")
        self.session_concurrency = session_concurrency
        self.max_call_seconds = max_call_seconds
        self._gates: dict[str, _Gate] = {}

    def off_loop(self, fn: Callable[..., T], *args: object) -> asyncio.Future[T]:
        """``fn(*args)`` on the workers, outside any session's turn; await the future for its result."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._workers.submit(_job(loop, lambda: fn(*args), future, None))
        return future

    async def run(self, session_id: str, work: Callable[[CancelToken], T], *, what: str = "the call") -> T:
        """``work(token)`` on the workers in ``session_id``'s turn; cancelling the awaiting task cancels ``token``.

        Past ``max_call_seconds`` the token is cancelled and ``CallTookTooLong`` raised (once the work has
        stopped, or after a few seconds more if it will not)."""
        gate = self._gates.get(session_id)
        if gate is None:
            gate = self._gates[session_id] = _Gate(self.session_concurrency)
        try:
            await gate.acquire()
        except BaseException:
            self._drop_if_idle(session_id, gate)
            raise
        token = CancelToken()
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[T] = loop.create_future()  # the answer (cancelled with the awaiting task)
        stopped: asyncio.Future[None] = loop.create_future()  # the worker is really free

        def free() -> None:  # on the loop thread, once the worker is really free
            gate.release()
            self._drop_if_idle(session_id, gate)
            if not stopped.done():
                stopped.set_result(None)

        try:
            self._workers.submit(_job(loop, lambda: work(token), ended, free))
        except BaseException:
            gate.release()
            self._drop_if_idle(session_id, gate)
            raise
        try:
            async with asyncio.timeout(self.max_call_seconds):
                return await ended
        except TimeoutError:
            token.cancel()
            with contextlib.suppress(
                Exception
            ):  # it stopped, failed or would not stop: the limit is the answer
                await asyncio.wait_for(stopped, _AFTER_LIMIT)
            raise CallTookTooLong(
                f"{what} ran longer than this server allows ({self.max_call_seconds:g} s, "
                "[mcp.serve] max_call_seconds)"
            ) from None
        except asyncio.CancelledError:
            token.cancel()
            raise

    def _drop_if_idle(self, session_id: str, gate: _Gate) -> None:
        if gate.idle and self._gates.get(session_id) is gate:
            del self._gates[session_id]

    def busy(self, session_id: str) -> bool:
        """Whether a call of ``session_id`` is running or waiting."""
        return session_id in self._gates

    def close(self) -> None:
        self._workers.close()


def _job(
    loop: asyncio.AbstractEventLoop,
    call: Callable[[], T],
    answer: asyncio.Future[T],
    free: Callable[[], None] | None,
) -> Callable[[bool], None]:
    """What a worker runs: ``call()`` (unless told to skip it), then its answer (and ``free``) handed to the
    loop in one wake-up."""

    def settle(result: object, error: BaseException | None) -> None:
        if free is not None:
            free()
        if answer.done():  # the caller stopped waiting (cancelled, or past its time limit)
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(result)  # type: ignore[arg-type]

    def job(skip: bool) -> None:
        result: object = None
        error: BaseException | None = None
        try:
            if skip:
                raise RuntimeError("the server is closing")
            result = call()
        except BaseException as err:  # handed to the awaiting task, as run_in_executor would
            error = err
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is closed: nobody waits for this answer any more
            pass

    return job
