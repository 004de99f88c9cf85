"""Cancelling a call that is already running: a ``Cancellation`` the caller holds and the call observes.

A caller that may give up on a call (an MCP client sending ``notifications/cancelled``, a chat UI's stop button,
a server-wide time limit) makes a ``Cancellation`` and passes it along: ``system.call_outcome(..., cancel=c)``.
``c.cancel(reason)`` from any thread then stops the call:

- before its handler starts, the call ends at once as an error of kind ``cancelled``;
- an async handler is cancelled (``CancelledError`` at its next ``await``);
- a sync handler sees ``context.cancelled`` turn true (``context.check_cancelled()`` raises ``CallCancelled``);
  what it runs in the sandbox (``terminal``, ``execute_code``) is killed with its whole process tree, because the
  sandbox watches ``current_cancellation()`` while it waits for the command;
- callbacks registered with ``on_cancel`` run (once, on the cancelling thread: keep them short).

The handler's outcome is then an error of kind ``cancelled`` (``CallCancelled`` is a ``ToolError``).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .errors import ToolError

__all__ = ["CallCancelled", "Cancellation", "cancelling", "current_cancellation"]

_CURRENT: ContextVar[Cancellation | None] = ContextVar("hermes_cancellation", default=None)


class CallCancelled(ToolError):
    """The call was cancelled by its caller; raised inside a handler by ``check_cancelled``."""

    def __init__(self, reason: str = "the call was cancelled") -> None:
        super().__init__(f"Cancelled: {reason}.", kind="cancelled", retryable=True)
        self.reason = reason


class Cancellation:
    """A flag one side sets (``cancel``) and a running call observes (``cancelled``, ``on_cancel``, ``wait``).

    Thread-safe; cancelling twice keeps the first reason.
    """

    __slots__ = ("_callbacks", "_event", "_keys", "_lock", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], Any]] = {}
        self._keys = itertools.count()
        self.reason = ""

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "the call was cancelled") -> bool:
        """Cancel (thread-safe) and run the ``on_cancel`` callbacks; False when it was cancelled already."""
        with self._lock:
            if self._event.is_set():
                return False
            self.reason = reason
            self._event.set()
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a broken callback must not stop the others
                logging.getLogger("hermes").exception("an on_cancel callback failed")
        return True

    def on_cancel(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Run ``callback()`` when cancelled (at once if it already is); returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                key = next(self._keys)
                self._callbacks[key] = callback
                return lambda: self._forget(key)
        callback()
        return _nothing

    def _forget(self, key: int) -> None:
        with self._lock:
            self._callbacks.pop(key, None)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass; True when cancelled."""
        return self._event.wait(timeout)

    def check(self) -> None:
        """Raise ``CallCancelled`` when cancelled."""
        if self._event.is_set():
            raise CallCancelled(self.reason)

    def __repr__(self) -> str:
        return f"<Cancellation {'cancelled: ' + self.reason if self.cancelled else 'active'}>"


def _nothing() -> None:
    return None


def current_cancellation() -> Cancellation | None:
    """The cancellation of the call running on this thread (or task), if its caller gave one."""
    return _CURRENT.get()


@contextmanager
def cancelling(cancel: Cancellation | None) -> Iterator[None]:
    """Make ``cancel`` the current cancellation for the block (the pipeline does this around a handler)."""
    token = _CURRENT.set(cancel)
    try:
        yield
    finally:
        _CURRENT.reset(token)
