"""hermes-ratelimit: token-bucket limits on tool calls (global, per session, per tool), memory or Redis.

Configured in the ``[plugins.ratelimit]`` section of the hermes config; see the README for the keys.
A blocked call ends with ``Block("...; retry in 2.3 s")`` so the model knows when to try again.
Importing the package is cheap: the limiter loads on the first call.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hermes_core import Block, CallContext, hookimpl

if TYPE_CHECKING:
    from ._state import limiter_for
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

_LAZY = {
    "ConfigError": "config",
    "LimitConfig": "config",
    "Rate": "config",
    "ToolRule": "config",
    "RateLimiter": "limiter",
    "Verdict": "limiter",
    "limiter_for": "_state",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_ratelimit' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


_impl: Any = None  # (limiter_for, ConfigError), imported on the first call


@hookimpl
def pre_tool_call(name: str, context: CallContext) -> Block | None:
    """Take a token for this call; block it with a retry hint when a bucket is empty."""
    global _impl
    if _impl is None:
        from ._state import limiter_for
        from .config import ConfigError

        _impl = (limiter_for, ConfigError)
    get_limiter, config_error = _impl
    try:
        limiter = get_limiter(context)
    except config_error as exc:
        return Block(f"the rate limiter is misconfigured: {exc}")
    verdict = limiter.check(name, context.session_id)
    return None if verdict.allowed else Block(verdict.reason)
