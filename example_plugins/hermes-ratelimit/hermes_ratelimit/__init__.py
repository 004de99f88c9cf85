"""hermes-ratelimit: token-bucket limits on tool calls (global, per session, per tool), memory or Redis.

Configured in the ``[plugins.ratelimit]`` section of the hermes config; see the README for the keys.
A blocked call ends with ``Block("...; retry in 2.3 s")`` so the model knows when to try again.
The library side lives in the submodules: ``hermes_ratelimit.limiter.RateLimiter``,
``hermes_ratelimit.config.LimitConfig``; Redis loads only when the Redis backend is configured.
"""

from __future__ import annotations

from hermes_core import Block, CallContext, hookimpl

from .config import SECTION_SCHEMA, ConfigError
from .limiter import RateLimiter

__version__ = "0.1.0"


@hookimpl
def plugin_config_schema() -> dict[str, object]:
    """The shape of ``[plugins.ratelimit]``: a value of the wrong type is a doctor error with the key to fix."""
    return {"ratelimit": SECTION_SCHEMA}


@hookimpl
def pre_tool_call(name: str, context: CallContext) -> Block | None:
    """Take a token for this call; block it with a retry hint when a bucket is empty."""
    try:  # one limiter per tool system, made on its first call and closed with it
        limiter = context.stash(
            "ratelimit.limiter", lambda: RateLimiter.from_section(context.plugin_config("ratelimit"))
        )
    except ConfigError as exc:  # nothing is stashed: every call says so until the config is fixed
        return Block(f"the rate limiter is misconfigured: {exc}")
    verdict = limiter.check(name, context.session_id)
    return None if verdict.allowed else Block(verdict.reason)
