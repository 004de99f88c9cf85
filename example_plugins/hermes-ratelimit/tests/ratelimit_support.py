"""A tiny tool plugin for the hermes-ratelimit tests (a uniquely named module, importable from tests)."""

from __future__ import annotations

from typing import Any

import hermes_ratelimit

from hermes_core import ToolRegistry, ToolSystem, hookimpl


def _echo(text: str = "") -> str:
    return f"echo: {text}"


def _ping() -> str:
    return "pong"


class ToyTools:
    """Registers ``echo`` and ``ping`` in the toolset ``toy``."""

    @hookimpl
    def register_tools(self, registry: ToolRegistry) -> None:
        for name, handler in (("echo", _echo), ("ping", _ping)):
            params: dict[str, Any] = {"type": "object", "properties": {}}
            if name == "echo":
                params["properties"] = {"text": {"type": "string"}}
            registry.register(
                name=name,
                toolset="toy",
                schema={"name": name, "description": f"{name} tool", "parameters": params},
                handler=handler,
            )


def load(section: dict[str, Any]) -> ToolSystem:
    """A system with the toy tools and the rate limiter configured by ``section`` (for the gateway processes the
    tests start; in-process tests use the ``make_tool_system`` fixture)."""
    return ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[ToyTools(), hermes_ratelimit],
        config={"plugins": {"ratelimit": section}},
    )
