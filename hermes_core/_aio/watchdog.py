"""Timeouts for sync handlers that run inline on the caller's thread.

Running every sync handler on a worker thread would cost tens of microseconds per call; instead the
call is armed with a deadline and a single watchdog thread raises ``HandlerTimeout`` inside the
handler's thread when it passes (``PyThreadState_SetAsyncExc``). The exception lands at the handler's
next Python instruction: code blocked inside one long C call is interrupted when that call returns.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["HandlerTimeout", "Watchdog"]

_async_exc: list[Any] = []  # (set, clear) from ctypes, made when the watchdog starts (ctypes costs start-up)


def _async_exc_functions() -> tuple[Any, Any]:
    if not _async_exc:
        import ctypes

        set_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
            ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
        )
        # the same function with a NULL exception clears a pending one
        clear_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
            ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
        )
        _async_exc[:] = [set_exc, clear_exc]
    return _async_exc[0], _async_exc[1]


_monotonic = time.monotonic
_get_ident = threading.get_ident


class HandlerTimeout(BaseException):
    """Raised inside a handler whose deadline passed (a BaseException so handlers' ``except Exception`` miss it)."""


class Watchdog:
    """Arms deadlines for threads (or callbacks); one daemon thread fires the ones that pass."""

    def __init__(self, resolution: float = 0.05) -> None:
        # token -> (deadline, thread ident to interrupt, or a callback to call from the watchdog thread)
        self._armed: dict[int, tuple[float, Any]] = {}
        self.armed = self._armed
        self._fired: set[int] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._tokens = itertools.count(1)
        self.tokens = self._tokens
        self._thread: threading.Thread | None = None
        self._resolution = resolution
        self._stopped = False

    def arm(self, timeout: float) -> int:
        token = next(self._tokens)
        self._armed[token] = (_monotonic() + timeout, _get_ident())
        if self._thread is None:
            self.start()
        return token

    def arm_call(self, timeout: float, callback: Callable[[], object]) -> int:
        """Call ``callback()`` on the watchdog thread when ``timeout`` seconds pass, unless disarmed first."""
        token = next(self._tokens)
        self._armed[token] = (_monotonic() + timeout, callback)
        if self._thread is None:
            self.start()
        return token

    def disarm(self, token: int) -> bool:
        """Disarm; True when the deadline had already fired (any pending exception is cleared)."""
        if self._armed.pop(token, None) is not None:
            return False
        return self.fired(token)

    def fired(self, token: int) -> bool:
        """After a token was found no longer armed: did it fire? Clears the pending exception if so.

        ``arm``/``disarm`` inlined by a hot caller: ``token = next(w.tokens)``, ``w.armed[token] = (deadline,
        thread ident)`` (after ``w.start()`` once), then ``w.armed.pop(token, None) is None and w.fired(token)``.
        """
        with self._lock:
            if token in self._fired:
                self._fired.discard(token)
                _async_exc_functions()[1](threading.get_ident(), None)  # drop it if not raised yet
                return True
        return False

    def start(self) -> None:
        """Start the watchdog thread (``arm`` does it on first use)."""
        if self._thread is not None:
            return
        _async_exc_functions()  # ready before any deadline can fire
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hermes-watchdog", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not self._stopped:
            self._wake.wait(self._resolution)
            now = time.monotonic()
            for token, (deadline, target) in list(self._armed.items()):
                if deadline <= now:
                    with self._lock:
                        if self._armed.pop(token, None) is None:
                            continue  # disarmed meanwhile
                        if callable(target):
                            try:
                                target()
                            except Exception:  # a callback must not stop the watchdog
                                pass
                            continue
                        self._fired.add(token)
                        _async_exc_functions()[0](target, HandlerTimeout)

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()
