"""The one event loop of a tool system, run by the threads that call its async handlers.

The async handlers of a system run on one loop object, so async clients that handlers cache (an
``httpx.AsyncClient``, a database pool) stay bound to a loop that stays alive and valid across calls. Which
loop that is:

- A host that awaits ``acall()`` lends its own running loop: ``acall()`` adopts the caller's loop whenever the
  system's loop is idle (the private loop between calls, whatever it ran before, or a host loop that stopped or
  closed), and from then on async handlers run right there, in the awaiting task: a native call costs a few
  microseconds, not a thread hop. A private loop left behind is closed then, so a client a handler bound to it
  is bound to a closed loop: keep loop-bound clients per loop. A sync ``call()`` made from another thread while
  the adopted loop runs is handed to it (``run_coroutine_threadsafe``). When the adopted loop closes, the next
  call adopts again or falls back to the private loop. Only an ``acall()`` whose system loop is busy on another
  thread right now (another host's running loop, the private loop running a sync call) hands its coroutine over,
  without blocking its own loop.
- Otherwise (sync callers only) a private loop that the callers run themselves: when it is idle a sync caller
  runs it (``run_until_complete``), which costs about 10 us, where waking another thread and being woken back
  costs 70-100 us. When another thread is already running it, the caller hands its coroutine over to that
  thread and waits, so concurrent calls still run concurrently; the running thread keeps the loop going until
  every handed-over call is done. A caller inside a running event loop (a sync ``call()`` from a coroutine)
  runs the private loop the same way, with its own loop set aside for the duration of the call.

A sync call that cannot use the system loop without deadlocking or running someone else's tasks (an async
handler calling the system synchronously, a sync ``call()`` made on the adopted loop's own thread, or while
the adopted loop is stopped between a host's ``run_until_complete`` calls) runs on a side loop: handlers
should not expect their loop-bound clients to work there (use ``acall`` from async code).

The private loop only runs while calls are in flight: a handler must not rely on background tasks it started
outliving its call (keep such work on a thread of its own, as the MCP client does with ``LoopBridge``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from .bridge import _with_timeout
from .watchdog import Watchdog

__all__ = ["SharedLoop"]

T = TypeVar("T")

_get_ident = threading.get_ident


class SharedLoop:
    """The event loop of a system's async handlers: a host's adopted loop or a private one run on demand by
    its callers (see the module docstring)."""

    def __init__(self, watchdog: Watchdog | None = None) -> None:
        self._watchdog = watchdog  # times out the calls a caller runs inline (cheaper than a loop timer)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._adopted = False  # _loop is a host's running loop (lent by acall), not ours to run or close
        self._state = threading.Lock()
        self._owner: int | None = None  # ident of the thread running the private loop right now
        self._handed_over = 0  # calls waiting for the owner to run them
        self._nested: SharedLoop | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop async handlers run on now (the adopted one, else the private one, made on first use)."""
        loop = self._loop
        if loop is None:
            with self._state:
                if self._loop is None:
                    self._loop, self._adopted = asyncio.new_event_loop(), False
                loop = self._loop
        return loop

    def in_loop_thread(self) -> bool:
        """True inside a handler running on this loop."""
        if self._adopted:
            return self._loop is not None and asyncio.events._get_running_loop() is self._loop
        return self._owner == _get_ident()

    def claim(self, running: asyncio.AbstractEventLoop) -> bool:
        """For ``acall`` on ``running``: True when async handlers may run right there, because it is the
        system's loop or now becomes it (the system's loop was idle: see the module docstring); False when the
        system's loop is busy on another thread right now (hand the call over, ``run_elsewhere``)."""
        if self._loop is running:
            return True
        with self._state:
            loop = self._loop
            if loop is running:
                return True
            retired = None
            if loop is not None and not loop.is_closed():
                if self._adopted:
                    if loop.is_running():  # another host's loop, serving calls on its own thread
                        return False
                elif self._owner is not None or self._handed_over:  # a sync call runs the private loop now
                    return False
                else:
                    retired = loop
            self._loop, self._adopted = running, True
        if retired is not None:  # idle, and nobody can take it any more (``run`` checks under the lock)
            _close_private(retired)
        return True

    async def run_elsewhere(self, coro: Coroutine[Any, Any, T], timeout: float | None, executor: Any) -> T:
        """For ``acall`` on a loop that is not the system's: run ``coro`` there without blocking the caller."""
        loop = self._loop
        if self._adopted and loop is not None and loop.is_running():
            return await asyncio.wrap_future(
                asyncio.run_coroutine_threadsafe(_with_timeout(coro, timeout), loop)
            )
        caller = asyncio.get_running_loop()  # the private loop: a worker thread drives it
        return await caller.run_in_executor(executor, self.run, coro, timeout)

    def _side(self) -> SharedLoop:
        if self._nested is None:
            with self._state:
                if self._nested is None:
                    self._nested = SharedLoop(self._watchdog)
        return self._nested

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        """Run ``coro`` on the system's loop and return its result; ``TimeoutError`` after ``timeout`` seconds."""
        me = _get_ident()
        if self._owner == me:  # an async handler of this loop made a sync call back into the system
            return self._side().run(coro, timeout)
        if self._adopted:
            adopted = self._loop
            assert adopted is not None
            if adopted.is_running():
                if asyncio.events._get_running_loop() is adopted:  # a blocking call on the host loop's thread
                    return self._side().run(coro, timeout)
                return asyncio.run_coroutine_threadsafe(_with_timeout(coro, timeout), adopted).result()
            if not adopted.is_closed():  # the host stopped it for now: never run its tasks from here
                return self._side().run(coro, timeout)
            with self._state:  # the host's loop is gone: back to a private loop
                if self._loop is adopted:
                    self._loop, self._adopted = None, False
        loop = self.loop
        with self._state:
            moved = self._loop is not loop  # an acall adopted its loop meanwhile: that one serves us now
            inline = not moved and self._owner is None
            if inline:
                self._owner = me
            elif not moved:
                self._handed_over += 1
        if moved:
            return self.run(coro, timeout)
        if inline:
            return self._run_here(loop, coro, timeout)
        return self._hand_over(loop, coro, timeout)

    def _run_here(
        self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], timeout: float | None
    ) -> T:
        outer = asyncio.events._get_running_loop()
        if outer is not None:  # a sync call from inside another loop: set that loop aside meanwhile
            asyncio.events._set_running_loop(None)
        timed_out: list[bool] = []
        token = None
        watchdog = self._watchdog
        try:
            if timeout is None or watchdog is None:
                task = loop.create_task(_with_timeout(coro, timeout))
            else:  # the watchdog cancels the task from its thread when the deadline passes
                task = loop.create_task(coro)

                def expire() -> None:
                    timed_out.append(True)
                    loop.call_soon_threadsafe(task.cancel)

                token = watchdog.arm_call(timeout, expire)
            try:
                loop.run_until_complete(task)
            except asyncio.CancelledError:
                if not timed_out:
                    raise
            finally:
                if token is not None and watchdog is not None:
                    watchdog.armed.pop(token, None)
            while True:  # other threads handed calls over while we ran the loop: run it until they are done
                with self._state:
                    if self._handed_over == 0:
                        self._owner = None
                        break
                loop.run_until_complete(asyncio.sleep(0.0005))
            if timed_out and task.cancelled():
                raise TimeoutError(f"timed out after {timeout:g} s")
            return task.result()
        finally:
            if self._owner == _get_ident():  # left by an exception (KeyboardInterrupt): do not strand anyone
                self._release_after_error(loop)
            if outer is not None:
                asyncio.events._set_running_loop(outer)

    def _release_after_error(self, loop: asyncio.AbstractEventLoop) -> None:
        def keep_running() -> None:
            while True:
                with self._state:
                    if self._handed_over == 0:
                        self._owner = None
                        return
                loop.run_until_complete(asyncio.sleep(0.0005))

        with self._state:
            if self._handed_over == 0:
                self._owner = None
                return
        threading.Thread(target=keep_running, name="hermes-loop-drain", daemon=True).start()

    def _hand_over(
        self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], timeout: float | None
    ) -> T:
        done = threading.Lock()
        done.acquire()
        box: list[asyncio.Task[T]] = []

        def finished(task: asyncio.Task[T]) -> None:
            box.append(task)
            with self._state:
                self._handed_over -= 1
            done.release()

        def start() -> None:
            task = loop.create_task(_with_timeout(coro, timeout))
            task.add_done_callback(finished)

        loop.call_soon_threadsafe(start)
        done.acquire()
        return box[0].result()

    def close(self) -> None:
        """Cancel what is left on the private loop and close it (call when no call is in flight); an adopted
        loop belongs to its host and is left alone."""
        if self._nested is not None:
            self._nested.close()
        loop = self._loop
        if self._adopted:
            self._loop, self._adopted = None, False
            return
        if loop is None or loop.is_closed() or loop.is_running():
            return
        _close_private(loop)


def _close_private(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left on an idle private loop (tasks a handler left behind), then close it; runs it for
    that on this thread, with a loop running here set aside meanwhile."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    outer = asyncio.events._get_running_loop()
    if outer is not None:
        asyncio.events._set_running_loop(None)
    try:
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        if outer is not None:
            asyncio.events._set_running_loop(outer)
        loop.close()
