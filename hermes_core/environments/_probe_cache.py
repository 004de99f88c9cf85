"""Probes of the kinds that ask an engine or a host: one at a time per configuration, the answer shared for a while.

Every tool that needs the session environment has a check, and the checks run in parallel within a time budget;
without this, each would start its own ``podman version`` or SSH handshake at the same moment.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import TypeVar

__all__ = ["shared"]

T = TypeVar("T")
_answers: dict[Hashable, tuple[float, object]] = {}
_locks: dict[Hashable, threading.Lock] = {}
_guard = threading.Lock()


def shared(key: Hashable, ttl: float, probe: Callable[[], T]) -> T:
    """``probe()``'s answer for ``key``, reused for ``ttl`` seconds; concurrent callers wait for one probe."""
    with _guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        found = _answers.get(key)
        if found is not None and time.monotonic() - found[0] < ttl:
            answer: T = found[1]  # type: ignore[assignment]
            return answer
        answer = probe()
        _answers[key] = (time.monotonic(), answer)
        return answer
