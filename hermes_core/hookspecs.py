"""The hook specifications of the ``hermes`` pluggy project. ``hookspecs.md`` documents each one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from .context import CallContext
    from .decisions import CallOutcome
    from .environments import Environment
    from .host import Host
    from .registry import ToolEntry, ToolRegistry
    from .selection.ranking import Ranker, ToolDoc

PROJECT = "hermes"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_tools(registry: ToolRegistry) -> Mapping[str, str] | None:
    """Register this plugin's tools with ``registry.register(...)``; a plugin made of independent parts may return
    ``{part: reason}`` for those that failed alone (recorded on its ``PluginRecord.failed_units``)."""


@hookspec
def register_toolsets() -> dict[str, dict[str, Any]] | None:
    """Return composite toolsets: ``{name: {"tools": [...], "includes": [...], "description": "..."}}``."""


@hookspec
def plugin_config_schema() -> dict[str, dict[str, Any]] | None:
    """Return ``{section: JSON Schema}`` for the ``[plugins.<section>]`` tables this plugin reads: loading and
    ``hermes plugins doctor`` check the configuration against them."""


@hookspec
def pre_tool_call(name: str, arguments: dict[str, Any], entry: ToolEntry, context: CallContext) -> Any:
    """Inspect a validated call before it runs.

    Return None to allow, ``Block(reason)`` to refuse, ``Rewrite(arguments)`` to change the arguments or
    ``RequireApproval(reason)`` to ask a human. Raising blocks the call (fails closed).
    """


@hookspec
def post_tool_call(
    name: str, arguments: dict[str, Any], entry: ToolEntry | None, context: CallContext, outcome: CallOutcome
) -> None:
    """Observe every finished call (ok, error, blocked or denied). Raising is logged and changes nothing."""


@hookspec
def transform_tool_result(
    name: str, arguments: dict[str, Any], entry: ToolEntry, context: CallContext, result: str
) -> str | None:
    """Return a new result text for a successful call, or None to leave it. Later plugins see earlier rewrites."""


@hookspec
def register_commands(cli: Any) -> None:
    """Add commands to the ``hermes`` CLI: ``cli`` is its click group."""


@hookspec
def register_environments() -> dict[str, type[Environment]] | None:
    """Return environment kinds: ``{name: Environment subclass}``, chosen with ``[environment] kind = name``."""


@hookspec
def on_agent_message(system: Host, session_id: str, message: dict[str, Any]) -> None:
    """Observe each message an agent loop adds to a conversation (user, assistant, tool). Raising is logged.

    ``system`` is the tool system the agent runs on, seen through the ``Host`` protocol."""


@hookspec
def agent_context(system: Host, session_id: str, tools: frozenset[str]) -> str | None:
    """Text an agent should know from the start, added to its system prompt before each model request.

    ``system`` is the tool system the agent runs on, seen through the ``Host`` protocol; ``tools`` names the tools the agent may use in that request. Return a section (a heading and a few lines)
    or None; return the same text while nothing changed. Raising is logged and the section is left out.
    """


@hookspec
def register_tool_rankers() -> dict[str, Callable[[Sequence[ToolDoc]], Ranker]] | None:
    """Return rankers for ``tool_search`` by name: ``{name: factory}``, where ``factory(docs)`` makes an object
    whose ``search(query, limit)`` returns ``(tool name, score)`` pairs, best first. ``[tools] search_ranker``
    chooses one (or fuses several)."""
