"""The event loop the ``ssh`` kind's connections live on: one daemon thread for every SSH session of the process,
driven from sync code with ``run`` (asyncssh is asynchronous; the environment API is not)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .._aio.bridge import LoopBridge

__all__ = ["run", "submit"]

T = TypeVar("T")
_loop: LoopBridge | None = None
_loop_lock = threading.Lock()


def _bridge() -> LoopBridge:
    global _loop
    with _loop_lock:
        if _loop is None:
            from .._aio.bridge import LoopBridge

            _loop = LoopBridge("hermes-ssh")
        return _loop


def run(coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
    """Run ``coro`` on the SSH loop and wait for it (``TimeoutError`` after ``timeout`` seconds)."""
    return _bridge().run(coro, timeout)


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Start ``coro`` on the SSH loop without waiting for it."""
    return asyncio.run_coroutine_threadsafe(coro, _bridge().loop)
