"""The limiter: which buckets a call draws from, and what the model is told when one is empty."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from .buckets import Backend, Bucket, MemoryBackend
from .config import LimitConfig

__all__ = ["RateLimiter", "Verdict", "format_wait"]

log = logging.getLogger("hermes.ratelimit")


def format_wait(seconds: float) -> str:
    """Seconds rounded up to a tenth, so retrying after that long succeeds (``2.3 s``)."""
    return f"{math.ceil(seconds * 10 - 1e-9) / 10:.1f} s"


class Verdict:
    """The answer for one call: allowed, or a reason for the model that says when to retry."""

    __slots__ = ("allowed", "reason", "retry_after")

    def __init__(self, allowed: bool, reason: str = "", retry_after: float = 0.0) -> None:
        self.allowed = allowed
        self.reason = reason
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"Verdict(allowed={self.allowed}, reason={self.reason!r})"


ALLOWED = Verdict(True)


class RateLimiter:
    """Applies a ``LimitConfig`` through a backend (memory unless the config asks for Redis)."""

    def __init__(self, config: LimitConfig, backend: Backend | None = None) -> None:
        self.config = config
        if backend is None:
            if config.backend == "redis":
                from .redis_backend import RedisBackend

                backend = RedisBackend(config.redis_url)
            else:
                backend = MemoryBackend()
        self.backend = backend
        self._plans: dict[tuple[str, str], tuple[list[Bucket], list[str]]] = {}

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> RateLimiter:
        """Build from the raw ``[plugins.ratelimit]`` table (raises ``ConfigError``)."""
        return cls(LimitConfig.parse(section))

    def _buckets(self, tool: str, session: str) -> tuple[list[Bucket], list[str]]:
        plan = self._plans.get((tool, session))
        if plan is None:
            if len(self._plans) >= 4096:
                self._plans.clear()
            plan = self._plans[(tool, session)] = self._plan(tool, session)
        return plan

    def _plan(self, tool: str, session: str) -> tuple[list[Bucket], list[str]]:
        """The buckets a call of ``tool`` in ``session`` draws from, with the message for each."""
        cfg, prefix = self.config, self.config.key_prefix
        buckets, labels = [], []
        if cfg.global_rate is not None:
            buckets.append(Bucket(f"{prefix}:global", cfg.global_rate))
            labels.append("global rate limit for tool calls exceeded")
        if cfg.session_rate is not None:
            buckets.append(Bucket(f"{prefix}:session:{session}", cfg.session_rate))
            labels.append("rate limit for this session exceeded")
        rule = cfg.tool_rule(tool)
        if rule is not None:
            key = f"{prefix}:tool:{tool}"
            if rule.per_session:
                key += f":session:{session}"
            buckets.append(Bucket(key, rule.rate))
            labels.append(f"rate limit for tool {tool!r} exceeded")
        return buckets, labels

    def check(self, tool: str, session: str = "default") -> Verdict:
        """Take a token for this call from every bucket that applies, or refuse and say when to retry."""
        buckets, labels = self._buckets(tool, session)
        if not buckets:
            return ALLOWED
        try:
            result = self.backend.take(buckets)
        except Exception as exc:
            log.warning("rate limit backend failed: %s: %s", type(exc).__name__, exc)
            if self.config.on_backend_error == "allow":
                return ALLOWED
            return Verdict(
                False, f"the rate limiter is unavailable ({type(exc).__name__}); retry in a minute", 60.0
            )
        if result.allowed:
            return ALLOWED
        label = labels[result.blocked_by] if 0 <= result.blocked_by < len(labels) else "rate limit exceeded"
        return Verdict(False, f"{label}; retry in {format_wait(result.retry_after)}", result.retry_after)

    def close(self) -> None:
        self.backend.close()
