"""Process plumbing of the sandbox: a long-lived spawner thread, waiting on a pid, feeding stdin."""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import threading
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["Spawner", "feed", "pidfd", "wait_exit"]


class Spawner:
    """One long-lived thread that starts background processes.

    bwrap's ``--die-with-parent`` is tied to the *thread* that forked it; starting long-lived processes from
    a thread that lives as long as the sandbox keeps them alive until ``close()`` (and still ends them when
    the host process dies).
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def call(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="hermes-sandbox-spawner", daemon=True)
                self._thread.start()
        from concurrent.futures import Future  # (it loads logging: only when a process starts)

        future: Future[Any] = Future()
        self._queue.put((fn, future))
        return future.result()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, future = item
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed back to the caller
                future.set_exception(exc)

    def close(self) -> None:
        with self._lock:
            if self._thread is not None:
                self._queue.put(None)
                self._thread = None


def wait_exit(popen: subprocess.Popen[bytes], pidfd: int | None, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``popen`` to exit (and reap it); True when it has."""
    if pidfd is None:
        try:
            popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    import select

    select.select([pidfd], [], [], timeout)
    return popen.poll() is not None


def feed(stream: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
    with contextlib.suppress(OSError, ValueError):
        stream.close()


def pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd
