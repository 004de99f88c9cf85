"""The one event loop of a tool system, run by the threads that call its async handlers.

Every async handler of a system runs on this one loop object, so async clients that handlers cache (an
``httpx.AsyncClient``, a database pool) stay bound to a loop that stays alive and valid across calls. A sync
caller does not hand the coroutine to a loop thread and sleep: when the loop is idle the caller runs it itself
(``run_until_complete`` on the shared loop), which costs about 10 us here, where waking another thread and
being woken back costs 70-100 us on an idle machine. When another thread is already running the loop, the
caller hands its coroutine over to that thread and waits, so concurrent calls still run concurrently; the
running thread keeps the loop going until every handed-over call is done.

A caller inside a running event loop (a sync ``call()`` from a coroutine) runs the shared loop the same way,
with its own loop set aside for the duration of the call. An async handler that makes a sync call back into
the system is served by a second shared loop, so it cannot deadlock.

The loop only runs while calls are in flight: a handler must not rely on background tasks it started outliving
its call (keep such work on a thread of its own, as the MCP client does with ``LoopBridge``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from ._bridge import _with_timeout

__all__ = ["SharedLoop"]

T = TypeVar("T")

_get_ident = threading.get_ident


class SharedLoop:
    """One persistent event loop, run on demand by its callers (see the module docstring)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._state = threading.Lock()
        self._owner: int | None = None  # ident of the thread running the loop right now
        self._handed_over = 0  # calls waiting for the owner to run them
        self._nested: SharedLoop | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None:
            with self._state:
                if self._loop is None:
                    self._loop = asyncio.new_event_loop()
                loop = self._loop
        return loop

    def in_loop_thread(self) -> bool:
        """True inside a handler running on this loop."""
        return self._owner == _get_ident()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        """Run ``coro`` on the shared loop and return its result; ``TimeoutError`` after ``timeout`` seconds."""
        me = _get_ident()
        if self._owner == me:  # an async handler of this loop made a sync call back into the system
            if self._nested is None:
                self._nested = SharedLoop()
            return self._nested.run(coro, timeout)
        loop = self.loop
        with self._state:
            inline = self._owner is None
            if inline:
                self._owner = me
            else:
                self._handed_over += 1
        if inline:
            return self._run_here(loop, coro, timeout)
        return self._hand_over(loop, coro, timeout)

    def _run_here(
        self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], timeout: float | None
    ) -> T:
        outer = asyncio.events._get_running_loop()
        if outer is not None:  # a sync call from inside another loop: set that loop aside meanwhile
            asyncio.events._set_running_loop(None)
        try:
            task = loop.create_task(_with_timeout(coro, timeout))
            loop.run_until_complete(task)
            while True:  # other threads handed calls over while we ran the loop: run it until they are done
                with self._state:
                    if self._handed_over == 0:
                        self._owner = None
                        break
                loop.run_until_complete(asyncio.sleep(0.0005))
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
        """Cancel what is left on the loop and close it (call when no call is in flight)."""
        if self._nested is not None:
            self._nested.close()
        loop = self._loop
        if loop is None or loop.is_closed() or loop.is_running():
            return
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
