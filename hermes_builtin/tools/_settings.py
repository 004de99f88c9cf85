"""Reading the ``[plugins.<section>]`` tables of the service tools, and remembering which system a check ran for.

Service credentials live in the configuration (``api_key = {env = "OPENAI_API_KEY"}``); ``plugin_config``
resolves the ``{env}``/``{file}`` references, so an unset variable reads as missing here.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Protocol

from hermes_core import ToolError

if TYPE_CHECKING:
    from hermes_core import ToolSystem

__all__ = ["SystemRef", "as_float", "as_text", "require", "section"]


class _HasConfig(Protocol):
    def plugin_config(self, name: str) -> dict[str, Any]: ...


def section(source: _HasConfig, name: str) -> dict[str, Any]:
    """The ``[plugins.<name>]`` table of a system or call context (secrets resolved), ``{}`` when absent."""
    value = source.plugin_config(name)
    return value if isinstance(value, dict) else {}


def as_text(cfg: dict[str, Any], key: str, default: str | None = None) -> str | None:
    """A non-empty string setting (stripped), else ``default``."""
    value = cfg.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return default


def as_float(cfg: dict[str, Any], key: str, default: float, low: float, high: float) -> float:
    """A number setting clamped to ``[low, high]``; anything else reads as ``default``."""
    value = cfg.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return min(max(float(value), low), high)
    return default


def require(cfg: dict[str, Any], key: str, hint: str) -> str:
    """A setting a handler cannot work without; a clear ``ToolError`` (how to enable it) when it is missing."""
    value = as_text(cfg, key)
    if value is None:
        raise ToolError(f"not configured: {hint}", retryable=False)
    return value


class SystemRef:
    """The tool system a tool family's checks last ran for.

    ``dynamic_schema_overrides`` is called with the available tool names only; the family's check (which gets
    the system) records it here, so the override can read that system's configuration and stash. The built-ins
    register once per system, so each system has its own ``SystemRef``.
    """

    __slots__ = ("_ref",)

    def __init__(self) -> None:
        self._ref: weakref.ref[ToolSystem] | None = None

    def set(self, system: ToolSystem) -> None:
        if self._ref is None or self._ref() is not system:
            self._ref = weakref.ref(system)

    def get(self) -> ToolSystem | None:
        return self._ref() if self._ref is not None else None
