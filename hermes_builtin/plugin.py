"""The built-ins plugin: registers every built-in tool and the built-in composite toolsets."""

from __future__ import annotations

import importlib
from typing import Any

from hermes_core import ToolRegistry, hookimpl

# Each module registers one atomic toolset; importing them is cheap (handlers import heavy things lazily).
TOOL_MODULES: tuple[str, ...] = (
    "execution.terminal",
    "files.files",
    "work.todo",
    "work.memory",
    "work.session_search",
    "work.clarify",
    "work.skills",
    "work.kanban",
    "work.cronjob",
    "execution.code_execution",
    "work.agents",
    # media, messaging and platform services
    "services.image_generation",
    "services.video_generation",
    "services.text_to_speech",
    "services.send_message",
    "services.discord_tools",
    "services.homeassistant",
    "services.feishu",
    "web.web",
    "web.vision",
    "web.browser",
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
    if "memory" not in tools and "skill_view" not in tools:  # asked every turn: most agents need nothing
        return None
    from .agent_context import starting_context

    return starting_context(system, tools)
