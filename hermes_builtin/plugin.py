"""The built-ins plugin: registers every built-in tool and the built-in composite toolsets."""

from __future__ import annotations

import importlib
from typing import Any

from hermes_core import ToolRegistry, hookimpl

# Each module registers one atomic toolset; importing them is cheap (handlers import heavy things lazily).
TOOL_MODULES: tuple[str, ...] = (
    "terminal",
    "files",
    "todo",
    "memory",
    "session_search",
    "clarify",
    "skills",
    "kanban",
    "cronjob",
    "code_execution",
    "agents",
    # media, messaging and platform services
    "image_generation",
    "video_generation",
    "text_to_speech",
    "send_message",
    "discord_tools",
    "homeassistant",
    "feishu",
    "web",
    "vision",
    "browser",
)


@hookimpl
def register_tools(registry: ToolRegistry) -> None:
    for name in TOOL_MODULES:
        importlib.import_module(f"hermes_builtin.tools.{name}").register(registry)


@hookimpl
def register_toolsets() -> dict[str, dict[str, Any]]:
    from .toolsets import TOOLSETS

    return TOOLSETS


@hookimpl
def register_commands(cli: Any) -> None:
    from .commands import add_commands

    add_commands(cli)


@hookimpl
def on_agent_message(system: Any, session_id: str, message: dict[str, Any]) -> None:
    from .sessions import record_agent_message

    record_agent_message(system, session_id, message)


@hookimpl
def agent_context(system: Any, tools: frozenset[str]) -> str | None:
    from .agent_context import starting_context

    return starting_context(system, tools)
