"""``hermes tools list`` and ``hermes tools show``: what is registered, where it came from, can the model see it."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

import click

from ..plugins import source_label
from ._output import emit_json, emit_table, is_terminal
from ._state import get_state

if TYPE_CHECKING:
    from ..registry import ToolEntry
    from ..system import ToolSystem

__all__ = ["tool_row", "tools_group"]

_EVERYTHING: dict[str, Any] = {"enabled": ["all"], "disabled": [], "disabled_tools": []}


def tool_row(entry: ToolEntry, available: bool, reason: str, selected: bool) -> dict[str, Any]:
    """The JSON row of one tool in ``tools list``."""
    return {
        "name": entry.name,
        "toolset": entry.toolset,
        "plugin": entry.plugin,
        "distribution": entry.distribution,
        "version": entry.version,
        "source": source_label(entry.source, entry.distribution),
        "available": available,
        "reason": reason,
        "emoji": entry.emoji,
        "selected": selected,
    }


def overridden(system: ToolSystem, entry: ToolEntry) -> str | None:
    """The plugin whose tool of this name ``entry`` replaced through the config's ``[tools] override``."""
    displaced = system.plugins.arbiter.overridden.get(entry.name)
    wanted = system.config.tool_overrides.get(entry.name)
    if displaced is None or wanted is None:
        return None
    from ..plugins import plugin_matches

    return displaced if plugin_matches(wanted, entry.plugin, entry.distribution) else None


def _unknown_toolset(system: ToolSystem, name: str) -> click.BadParameter:
    close = difflib.get_close_matches(name, system.toolsets.names(), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return click.BadParameter(f"unknown toolset {name!r}{hint}", param_hint="'--toolset'")


def toolset_members(system: ToolSystem, name: str) -> set[str]:
    """The tool names a toolset stands for; an unknown name is a usage error."""
    from ..selection import ALL, ToolsetError

    if name != ALL and name not in system.toolsets.names():
        raise _unknown_toolset(system, name)
    try:
        return system.toolsets.expand(name)
    except ToolsetError:
        raise _unknown_toolset(system, name) from None


@click.group("tools")
def tools_group() -> None:
    """Inspect the registered tools."""


@tools_group.command("list")
@click.option(
    "--toolset", "toolset", metavar="T", help="Only the tools of this toolset (atomic or composite)."
)
@click.option(
    "--all", "show_all", is_flag=True, help="Every registered tool, not only those the config selects."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of rows.")
def list_command(toolset: str | None, show_all: bool, as_json: bool) -> None:
    """List tools with their availability (hidden tools say why).

    By default the tools the configuration selects (toolsets.enabled/disabled, tools.disabled).
    Plain columns: name, toolset, plugin, source, available, reason. A tool that replaces a built-in through
    the config's ``[tools] override`` says so in the plugin column.
    """
    system = get_state().system()
    selected = system.available() | set(system.hidden())
    everything_ok = system.available(**_EVERYTHING)
    everything_hidden = system.hidden(**_EVERYTHING)
    members = toolset_members(system, toolset) if toolset else None
    rows = []
    for entry in system.registry.entries():
        if not show_all and entry.name not in selected:
            continue
        if members is not None and entry.name not in members:
            continue
        ok = entry.name in everything_ok
        rows.append(tool_row(entry, ok, everything_hidden.get(entry.name, ""), entry.name in selected))
        rows[-1]["overrides"] = overridden(system, entry)
    rows.sort(key=lambda r: (r["toolset"], r["name"]))
    if as_json:
        emit_json(rows)
        return
    emit_table(
        ["name", "toolset", "plugin", "source", "available", "reason"],
        [
            [
                f"{r['emoji']} {r['name']}".strip() if is_terminal() else r["name"],
                r["toolset"],
                f"{r['plugin']} (overrides {r['overrides']})" if r["overrides"] else r["plugin"],
                r["source"],
                r["available"],
                r["reason"],
            ]
            for r in rows
        ],
        title=f"{len(rows)} tools",
    )


def _describe(system: ToolSystem, entry: ToolEntry) -> dict[str, Any]:
    ok, reason = system.availability_of(entry.name)
    selected = entry.name in system.available() or entry.name in system.hidden()
    schema = system.tool_schema(entry, system.available(**_EVERYTHING))
    return {
        **tool_row(entry, ok, reason, selected),
        "overrides": overridden(system, entry),
        "description": entry.description,
        "requires_env": list(entry.requires_env),
        "has_check": entry.check_fn is not None,
        "is_async": entry.is_async,
        "parallel_safe": entry.parallel_safe,
        "timeout": entry.timeout,
        "max_result_size_chars": entry.max_result_size_chars,
        "schema": schema,
    }


@tools_group.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the details as JSON.")
def show_command(name: str, as_json: bool) -> None:
    """Show one tool: schema, provenance, availability and why it is hidden."""
    import json

    system = get_state().system()
    entry = system.registry.get(name)
    if entry is None:
        close = difflib.get_close_matches(name, system.registry.names(), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise click.ClickException(f"no tool named {name!r}{hint}")
    info = _describe(system, entry)
    if as_json:
        emit_json(info)
        return
    origin = info["plugin"] or "unknown plugin"
    if info["distribution"]:
        origin += f" ({info['distribution']} {info['version'] or ''})".replace(" )", ")")
    state = "available" if info["available"] else f"hidden: {info['reason']}"
    lines = [
        f"name:        {info['name']}",
        f"toolset:     {info['toolset']}",
        f"plugin:      {origin}"
        + (f" (overrides the tool of {info['overrides']}: [tools] override)" if info["overrides"] else ""),
        f"source:      {info['source']}",
        f"status:      {state}",
        f"selected:    {'yes' if info['selected'] else 'no (not in the configured toolsets)'}",
    ]
    if info["requires_env"]:
        lines.append(f"requires:    {', '.join(info['requires_env'])}")
    lines.append(f"description: {info['description']}")
    lines.append("schema:")
    click.echo("\n".join(lines))
    click.echo(json.dumps(info["schema"], indent=2, ensure_ascii=False))
