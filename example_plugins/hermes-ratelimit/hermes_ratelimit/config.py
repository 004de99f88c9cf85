"""The ``[plugins.ratelimit]`` section, parsed and checked: which buckets exist and how fast they refill."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["SECTION_SCHEMA", "ConfigError", "LimitConfig", "Rate", "ToolRule"]

_WINDOWS = {"per_second": 1.0, "per_minute": 60.0, "per_hour": 3600.0}
_RATE_KEYS = frozenset({"capacity", *_WINDOWS})
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_KEY_PREFIX = "{hermes-ratelimit}"
_TOP_KEYS = frozenset(
    {"backend", "redis_url", "key_prefix", "on_backend_error", "global", "session", "tools"}
)


def _rate_schema(**extra: dict[str, Any]) -> dict[str, Any]:
    positive = {"type": "number", "exclusiveMinimum": 0}
    return {
        "type": "object",
        "properties": {
            "capacity": {"type": "number", "minimum": 1},
            **dict.fromkeys(_WINDOWS, positive),
            **extra,
        },
        "additionalProperties": False,
        "oneOf": [{"required": [window]} for window in _WINDOWS],
    }


SECTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "backend": {"enum": ["memory", "redis"]},
        "redis_url": {"type": "string", "minLength": 1},
        "key_prefix": {"type": "string", "minLength": 1},
        "on_backend_error": {"enum": ["block", "allow"]},
        "global": _rate_schema(),
        "session": _rate_schema(),
        "tools": {"type": "object", "additionalProperties": _rate_schema(per_session={"type": "boolean"})},
    },
    "additionalProperties": False,
}
"""The ``[plugins.ratelimit]`` table as JSON Schema: hermes checks the config against it at load and in
``hermes plugins doctor`` (``LimitConfig.parse`` checks the same rules when the limiter starts)."""


class ConfigError(ValueError):
    """The ratelimit section is malformed; the message names the offending key."""


@dataclass(frozen=True, slots=True)
class Rate:
    """A token bucket: holds up to ``capacity`` tokens and gains ``refill_per_second`` tokens a second."""

    capacity: float
    refill_per_second: float

    @classmethod
    def parse(cls, section: object, where: str) -> Rate:
        """Read ``{capacity = N, per_second|per_minute|per_hour = M}``; capacity defaults to M."""
        if not isinstance(section, Mapping):
            raise ConfigError(f"{where} must be a table, got {type(section).__name__}")
        unknown = set(section) - _RATE_KEYS
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {sorted(unknown)}; expected capacity and one of per_*"
            )
        windows = [k for k in _WINDOWS if k in section]
        if len(windows) != 1:
            raise ConfigError(f"{where} needs exactly one of per_second, per_minute, per_hour")
        amount = _positive(section[windows[0]], f"{where}.{windows[0]}")
        capacity = _positive(section.get("capacity", amount), f"{where}.capacity")
        if capacity < 1:
            raise ConfigError(f"{where}.capacity must be at least 1 (a call takes one token)")
        return cls(capacity=capacity, refill_per_second=amount / _WINDOWS[windows[0]])


def _positive(value: object, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{where} must be a positive number, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class ToolRule:
    """A per-tool bucket; ``per_session`` gives every session its own bucket for this tool."""

    rate: Rate
    per_session: bool = False


@dataclass(frozen=True, slots=True)
class LimitConfig:
    """Everything the limiter needs; ``tools["*"]`` applies to every tool without a rule of its own."""

    backend: Literal["memory", "redis"] = "memory"
    redis_url: str = DEFAULT_REDIS_URL
    key_prefix: str = DEFAULT_KEY_PREFIX
    on_backend_error: Literal["block", "allow"] = "block"
    global_rate: Rate | None = None
    session_rate: Rate | None = None
    tools: Mapping[str, ToolRule] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """No bucket is configured: every call is allowed without touching a backend."""
        return self.global_rate is None and self.session_rate is None and not self.tools

    def tool_rule(self, tool: str) -> ToolRule | None:
        return self.tools.get(tool) or self.tools.get("*")

    @classmethod
    def parse(cls, section: Mapping[str, Any]) -> LimitConfig:
        """Check and read the ``[plugins.ratelimit]`` table; raises ``ConfigError``."""
        where = "[plugins.ratelimit]"
        unknown = set(section) - _TOP_KEYS
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}")
        backend = section.get("backend", "memory")
        if backend not in ("memory", "redis"):
            raise ConfigError(f"{where}.backend must be 'memory' or 'redis', got {backend!r}")
        on_error = section.get("on_backend_error", "block")
        if on_error not in ("block", "allow"):
            raise ConfigError(f"{where}.on_backend_error must be 'block' or 'allow', got {on_error!r}")
        redis_url = section.get("redis_url", DEFAULT_REDIS_URL)
        prefix = section.get("key_prefix", DEFAULT_KEY_PREFIX)
        for key, value in (("redis_url", redis_url), ("key_prefix", prefix)):
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where}.{key} must be a non-empty string")
        raw_tools = section.get("tools", {})
        if not isinstance(raw_tools, Mapping):
            raise ConfigError(f"{where}.tools must be a table of tool names")
        tools: dict[str, ToolRule] = {}
        for tool, rule in raw_tools.items():
            spot = f"{where}.tools.{tool}"
            if not isinstance(rule, Mapping):
                raise ConfigError(f"{spot} must be a table")
            per_session = rule.get("per_session", False)
            if not isinstance(per_session, bool):
                raise ConfigError(f"{spot}.per_session must be true or false")
            rate = Rate.parse({k: v for k, v in rule.items() if k != "per_session"}, spot)
            tools[str(tool)] = ToolRule(rate, per_session)
        return cls(
            backend=backend,
            redis_url=redis_url,
            key_prefix=prefix,
            on_backend_error=on_error,
            global_rate=Rate.parse(section["global"], f"{where}.global") if "global" in section else None,
            session_rate=Rate.parse(section["session"], f"{where}.session") if "session" in section else None,
            tools=tools,
        )
