"""Reading the ``[plugins.<section>]`` tables of the service tools.

Service credentials live in the configuration (``api_key = {env = "OPENAI_API_KEY"}``); ``plugin_config``
resolves the ``{env}``/``{file}`` references, so an unset variable reads as missing here.
"""

from __future__ import annotations

from typing import Any, Protocol

from hermes_core import ToolError

__all__ = ["as_float", "as_text", "require", "section"]


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
