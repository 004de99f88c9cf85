"""hermes-ratelimit: token-bucket limits on tool calls (global, per session, per tool), memory or Redis.

Configured in the ``[plugins.ratelimit]`` section of the hermes config; see the README for the keys.
A blocked call ends with ``Block("...; retry in 2.3 s")`` so the model knows when to try again.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from hermes_core import Block, CallContext, hookimpl

from .config import ConfigError, LimitConfig, Rate, ToolRule
from .limiter import RateLimiter, Verdict

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "LimitConfig",
    "Rate",
    "RateLimiter",
    "ToolRule",
    "Verdict",
    "limiter_for",
    "pre_tool_call",
]

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


@hookimpl
def pre_tool_call(name: str, context: CallContext) -> Block | None:
    """Take a token for this call; block it with a retry hint when a bucket is empty."""
    try:
        limiter = limiter_for(context)
    except ConfigError as exc:
        return Block(f"the rate limiter is misconfigured: {exc}")
    verdict = limiter.check(name, context.session_id)
    return None if verdict.allowed else Block(verdict.reason)
