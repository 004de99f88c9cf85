"""Cancellation that reaches everything a run started: one ``CancelToken`` per run (sub-runs get child tokens).

The token of the running agent turn is the *current* token of its threads and tasks (a context variable, set
with ``cancel_scope``). Whatever runs under it registers how it stops:

- the call pipeline runs a sync handler inside ``interrupt_on_cancel``: cancelling raises ``CallCancelled`` in
  the handler's thread at its next Python instruction, so the sandbox's own cleanup ends the process tree it
  was waiting for (``Sandbox.run`` kills the tree on any exception); an async handler's task is cancelled;
- an approval asked under a cancelled token is a denial, and an answer that comes after the cancel is too;
- a model stream stops at its next chunk (its socket is shut down).

``run_cancellable`` runs a piece of work on a daemon worker and stops waiting for it when the token is
cancelled (after a short grace), so the one who cancelled gets control back within a second even when the work
is stuck in a call that cannot be interrupted. This module imports nothing of ours: the pipeline, the model
clients, the approvals and the agent all use it, and it moves with the execution environment later.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Callable, Coroutine, Iterator
from contextvars import ContextVar, copy_context
from typing import Any, TypeVar

try:  # the C queue alone: queue.py (with heapq) costs ~0.5 ms of every start-up, for a class it re-exports
    from _queue import Empty, SimpleQueue
except ImportError:  # an interpreter without the C module
    from queue import Empty, SimpleQueue  # type: ignore[assignment]

from .._log import get_logger

__all__ = [
    "CallCancelled",
    "CancelToken",
    "cancel_scope",
    "cancellable",
    "current_token",
    "interrupt_on_cancel",
    "run_cancellable",
]

log = get_logger("hermes.cancel")
T = TypeVar("T")


class CallCancelled(BaseException):
    """Raised inside work whose ``CancelToken`` was cancelled.

    A ``BaseException`` (like ``KeyboardInterrupt``), so a handler's ``except Exception`` lets it through and the
    cleanup code on its way (``finally``, ``except BaseException``) ends what the work started.
    """


def _noop() -> None:
    return None


class CancelToken:
    """A thread-safe cancellation flag; cancelling a token cancels the tokens made from it with ``child()``
    and runs the callbacks registered with ``on_cancel``. Cheap to make: one is made for every run and request,
    and what only some need (an event to sleep on, the children, the callbacks) is made on first use."""

    __slots__ = ("__weakref__", "_callbacks", "_cancelled", "_children", "_event", "_lock", "_next")

    def __init__(self) -> None:
        self._cancelled = False
        self._lock = threading.Lock()
        self._event: threading.Event | None = None
        self._children: weakref.WeakSet[CancelToken] | None = None  # a finished child is not kept alive
        self._callbacks: dict[int, Callable[[], object]] | None = None
        self._next = 0

    def __repr__(self) -> str:
        return f"<CancelToken {'cancelled' if self._cancelled else 'live'}>"

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Cancel this token and its children; each ``on_cancel`` callback runs once, on this thread."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            event, children, callbacks = self._event, self._children, self._callbacks
            self._callbacks = None
        if event is not None:
            event.set()
        for callback in list(callbacks.values()) if callbacks else ():
            try:
                callback()
            except Exception:  # one broken callback must not keep the others from stopping their work
                log.exception("a cancel callback failed")
        for child in list(children) if children is not None else ():
            child.cancel()

    def child(self) -> CancelToken:
        """A token cancelled with this one (but cancelling it leaves this one alone)."""
        token = CancelToken()
        with self._lock:
            if self._cancelled:
                token._cancelled = True
            else:
                if self._children is None:
                    self._children = weakref.WeakSet()
                self._children.add(token)
        return token

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call ``callback()`` when the token is cancelled (at once, here, if it already is).

        Returns a function that unregisters it; call it when the work the callback would stop has ended.
        """
        with self._lock:
            if not self._cancelled:
                if self._callbacks is None:
                    self._callbacks = {}
                number = self._next
                self._next += 1
                self._callbacks[number] = callback
                return lambda: self._forget(number)
        callback()
        return _noop

    def _forget(self, number: int) -> None:
        with self._lock:
            if self._callbacks is not None:
                self._callbacks.pop(number, None)

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; True as soon as the token is cancelled."""
        with self._lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)


_CURRENT: ContextVar[CancelToken | None] = ContextVar("hermes_cancel_token", default=None)


current_token: Callable[[], CancelToken | None] = _CURRENT.get
"""The token of the run this thread or task works for (None outside any ``cancel_scope``)."""


@contextlib.contextmanager
def cancel_scope(token: CancelToken) -> Iterator[CancelToken]:
    """Make ``token`` the current one for the code inside (and the workers it starts with a copied context)."""
    reset = _CURRENT.set(token)
    try:
        yield token
    finally:
        _CURRENT.reset(reset)


# -- interrupting a thread ---------------------------------------------------------------------------------

_async_exc: list[Any] = []  # (set, clear): ctypes loads on the first interruption, not at import


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    """Make ``exc`` pending in thread ``thread_id`` (None clears a pending one)."""
    if not _async_exc:
        import ctypes

        api = ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
        set_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(api)
        clear_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(api)  # NULL clears
        _async_exc[:] = [set_exc, clear_exc]
    if exc is None:
        _async_exc[1](thread_id, None)
    else:
        _async_exc[0](thread_id, exc)


class _Interrupt:
    """While inside, cancelling ``token`` raises ``CallCancelled`` in this thread (at its next Python instruction:
    a long call into C is interrupted when it returns). Leaving after a cancel raises ``CallCancelled`` too, even
    when the work swallowed it, so the caller always learns that the work was cut short."""

    __slots__ = ("_fired", "_inside", "_lock", "_remove", "_thread", "token")

    def __init__(self, token: CancelToken) -> None:
        self.token = token
        self._lock = threading.Lock()
        self._fired = False
        self._inside = False
        self._thread = 0
        self._remove: Callable[[], None] = _noop

    def __enter__(self) -> _Interrupt:
        if self.token.cancelled:
            raise CallCancelled
        self._thread = threading.get_ident()
        self._inside = True
        self._remove = self.token.on_cancel(self._fire)
        return self

    def _fire(self) -> None:
        with self._lock:
            if not self._inside:
                return
            self._fired = True
            if self._thread == threading.get_ident():
                return  # cancelled from inside the work itself: __exit__ reports it
            _raise_in(self._thread, CallCancelled)

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        self._remove()
        with self._lock:
            self._inside = False
            fired = self._fired
        if fired:
            _raise_in(self._thread, None)  # not delivered yet: it must not land in the caller's code
            if kind is None or not issubclass(kind, CallCancelled):
                raise CallCancelled


def interrupt_on_cancel(token: CancelToken) -> _Interrupt:
    """``with interrupt_on_cancel(token): work()``: cancelling ``token`` raises ``CallCancelled`` inside ``work``."""
    return _Interrupt(token)


async def cancellable(coro: Coroutine[Any, Any, T], token: CancelToken) -> T:
    """Await ``coro`` in the current task; cancelling ``token`` cancels the task and raises ``CallCancelled``."""
    import asyncio

    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    cancelled: list[bool] = []
    if token.cancelled:
        coro.close()
        raise CallCancelled

    def fire() -> None:
        def cancel_task() -> None:
            if task is not None and not task.done():
                cancelled.append(True)
                task.cancel()

        loop.call_soon_threadsafe(cancel_task)

    remove = token.on_cancel(fire)
    try:
        return await coro
    except asyncio.CancelledError:
        if cancelled and task is not None and task.uncancel() == 0:
            raise CallCancelled from None
        raise
    finally:
        remove()


# -- waiting for work that may not stop --------------------------------------------------------------------


class _Job:
    __slots__ = ("call", "error", "finished", "value", "wake")

    def __init__(self, call: Callable[[], Any]) -> None:
        self.call = call
        self.finished = threading.Event()
        self.wake = threading.Event()  # set when the job finishes or its token is cancelled
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.call()
        except BaseException as err:  # handed to the waiting thread, which raises it there
            self.error = err
        finally:
            self.finished.set()
            self.wake.set()


class _Workers:
    """Daemon threads that run jobs (a stuck job never holds up the interpreter's exit); idle ones are reused."""

    def __init__(self, keep: int = 8, idle_seconds: float = 60.0) -> None:
        self._keep = keep
        self._idle_seconds = idle_seconds
        self._idle: list[SimpleQueue[_Job]] = []
        self._lock = threading.Lock()

    def start(self, job: _Job) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is not None:
            inbox.put(job)
        else:
            threading.Thread(target=self._serve, args=(job,), name="hermes-run-worker", daemon=True).start()

    def _serve(self, job: _Job) -> None:
        inbox: SimpleQueue[_Job] = SimpleQueue()
        while True:
            job.run()
            with self._lock:
                if len(self._idle) >= self._keep:
                    return
                self._idle.append(inbox)
            try:
                job = inbox.get(timeout=self._idle_seconds)
            except Empty:
                with self._lock:
                    if inbox in self._idle:
                        self._idle.remove(inbox)
                        return
                job = inbox.get()  # taken off the idle list just now: its job is on the way


_workers = _Workers()


def run_cancellable(token: CancelToken, grace: float, fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args)`` on a worker, with ``token`` current there, and return its result (or raise its error).

    When ``token`` is cancelled first, the work gets ``grace`` seconds to stop (what it does under the token
    stops itself: interrupted handlers, killed process trees, shut streams); if it has not, ``CallCancelled`` is
    raised here and the work is left to end on its own, its result unused. A ``KeyboardInterrupt`` while waiting
    cancels ``token``, gives the work the same grace, and propagates.
    """
    context = copy_context()
    context.run(_CURRENT.set, token)
    job = _Job(functools.partial(context.run, fn, *args))
    _workers.start(job)
    remove = token.on_cancel(job.wake.set)
    try:
        job.wake.wait()
    except KeyboardInterrupt:
        token.cancel()
        job.finished.wait(grace)
        raise
    finally:
        remove()
    if not job.finished.is_set() and not job.finished.wait(grace):
        raise CallCancelled
    if job.error is not None:
        raise job.error
    return job.value  # type: ignore[no-any-return]
