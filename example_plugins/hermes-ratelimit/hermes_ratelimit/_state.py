"""The limiter of each tool system: built on its first call, rebuilt when its section changes."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from hermes_core import CallContext

from .limiter import RateLimiter

__all__ = ["limiter_for"]

# One limiter per tool system (so two systems in one process never share in-memory buckets), rebuilt when
# that system's ratelimit section changes. Keyed weakly, so a discarded system takes its limiter with it.
_Cached = tuple[dict[str, Any], RateLimiter]
_limiters: weakref.WeakKeyDictionary[Any, _Cached] = weakref.WeakKeyDictionary()
_unbound: dict[str, _Cached] = {}
_lock = threading.Lock()


def _cached(system: Any) -> _Cached | None:
    return _unbound.get("") if system is None else _limiters.get(system)


def limiter_for(context: CallContext) -> RateLimiter:
    """The limiter of the calling system, built from its ``[plugins.ratelimit]`` section."""
    section = context.plugin_config("ratelimit")
    system = context.system
    cached = _cached(system)
    if cached is not None and cached[0] == section:
        return cached[1]
    with _lock:
        cached = _cached(system)
        if cached is not None and cached[0] == section:
            return cached[1]
        limiter = RateLimiter.from_section(section)
        if cached is not None:
            cached[1].close()
        if system is None:
            _unbound[""] = (dict(section), limiter)
        else:
            _limiters[system] = (dict(section), limiter)
            on_close = getattr(system, "on_close", None)
            if on_close is not None:
                on_close(limiter.close)
        return limiter
