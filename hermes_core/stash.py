"""Per-system plugin state: one value per (system, key), made on first use and cleaned up when the system closes.

Tools and hooks that keep a client, a connection pool, a browser or a cache use ``context.stash(key, factory)``
(or ``system.stash``) instead of a module-level dict keyed by system: two systems in one process never share
state, and ``system.close()`` releases everything in the reverse order it was made.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ._log import get_logger

__all__ = ["Stash"]

T = TypeVar("T")

log = get_logger("hermes")


class Stash:
    """A thread-safe ``key -> value`` store whose values are closed with it.

    A value is made by ``factory()`` the first time its key is asked for; later calls return the same object.
    ``close()`` calls each value's cleanup (the ``cleanup`` given to ``get``, else the value's own ``close()``
    when it has one), newest first; a failing cleanup is logged and the others still run.
    """

    __slots__ = ("_cleanups", "_closed", "_lock", "_values")

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._cleanups: list[tuple[str, Callable[[], Any]]] = []
        self._lock = threading.RLock()
        self._closed = False

    def get(self, key: str, factory: Callable[[], T], cleanup: Callable[[T], Any] | None = None) -> T:
        """The value stored under ``key``, made with ``factory()`` on first use."""
        try:
            return self._values[key]  # type: ignore[no-any-return]
        except KeyError:
            pass
        with self._lock:
            if key in self._values:
                return self._values[key]  # type: ignore[no-any-return]
            if self._closed:
                raise RuntimeError("this tool system is closed")
            value = factory()
            self._values[key] = value
            if cleanup is not None:
                self._cleanups.append((key, lambda: cleanup(value)))
            else:
                closer = getattr(value, "close", None)
                if callable(closer):
                    self._cleanups.append((key, closer))
            return value

    def peek(self, key: str) -> Any:
        """The value under ``key`` or None, without making it."""
        return self._values.get(key)

    def pop(self, key: str) -> Any:
        """Remove ``key`` and run its cleanup now (so the next ``get`` makes a fresh value); returns the value."""
        with self._lock:
            value = self._values.pop(key, None)
            mine = [c for k, c in self._cleanups if k == key]
            self._cleanups = [(k, c) for k, c in self._cleanups if k != key]
        for cleanup in mine:
            try:
                cleanup()
            except Exception:
                log.exception("cleaning up stashed %r failed", key)
        return value

    @property
    def closed(self) -> bool:
        return self._closed

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def close(self) -> None:
        """Run every cleanup, newest first; further ``get`` calls raise."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            cleanups = list(reversed(self._cleanups))
            self._cleanups.clear()
        for key, cleanup in cleanups:
            try:
                cleanup()
            except Exception:
                log.exception("cleaning up stashed %r failed", key)
        with contextlib.suppress(Exception):
            self._values.clear()
