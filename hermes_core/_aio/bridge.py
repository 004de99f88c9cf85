"""An event loop on a daemon thread of its own, for work that must keep running between calls.

The MCP client keeps its server sessions here (they read and answer messages all the time). Callers hand a
coroutine over and block until it finishes. Tool handlers use ``SharedLoop`` instead, which avoids the two
thread wake-ups per call. A sync call made from inside this loop's own thread is served by a second loop,
so it cannot deadlock.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopBridge"]

T = TypeVar("T")


class LoopBridge:
    """A daemon thread running an event loop; ``run(coro, timeout)`` executes a coroutine on it."""

    def __init__(self, name: str = "hermes-async") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._nested: LoopBridge | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None:
            loop = self._start()
        return loop

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is not None:
                return self._loop
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            thread = threading.Thread(target=main, name=self._name, daemon=True)
            thread.start()
            ready.wait()
            self._thread = thread
            self._loop = loop
            return loop

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        """Run ``coro`` on the background loop and wait; raises ``TimeoutError`` after ``timeout`` seconds."""
        if self.in_loop_thread():
            if self._nested is None:
                self._nested = LoopBridge(self._name + "-nested")
            return self._nested.run(coro, timeout)
        loop = self.loop
        done = threading.Lock()
        done.acquire()
        box: list[Any] = []

        def finished(task: asyncio.Future[T]) -> None:
            box.append(task)
            done.release()

        def start() -> None:
            task = loop.create_task(_with_timeout(coro, timeout))
            task.add_done_callback(finished)

        loop.call_soon_threadsafe(start)
        done.acquire()
        task: asyncio.Future[T] = box[0]
        return task.result()

    def close(self) -> None:
        """Cancel what still runs, stop the loop and join its thread."""
        if self._nested is not None:
            self._nested.close()
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await loop.shutdown_asyncgens()

        if thread.is_alive() and not self.in_loop_thread():
            try:
                asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=5)
            except Exception:
                pass
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
        if not loop.is_running():
            loop.close()
        self._loop = None
        self._thread = None


async def _with_timeout(coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
    if timeout is None:
        return await coro
    async with asyncio.timeout(timeout):
        return await coro
