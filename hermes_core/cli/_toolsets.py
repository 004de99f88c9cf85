"""``hermes toolsets`` and ``hermes schema export``: what each toolset costs the model, in every format."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from ._output import emit_json, emit_table
from ._state import get_state
from ._tools import toolset_members

if TYPE_CHECKING:
    from ..system import ToolSystem

__all__ = ["definitions_size", "schema_group", "toolset_rows", "toolsets_command"]

CHARS_PER_TOKEN = 4


def definitions_size(definitions: list[dict[str, Any]]) -> tuple[int, int]:
    """(characters of the JSON the model is sent, estimated tokens = characters / 4)."""
    chars = len(json.dumps(definitions))
    return chars, chars // CHARS_PER_TOKEN


def toolset_rows(system: ToolSystem) -> list[dict[str, Any]]:
    """One row per atomic and composite toolset: its registered members, the tools available after checks, and
    the size of their definitions."""
    composites = system.toolsets.composites()
    atomic = system.registry.toolsets()
    rows = []
    for name in system.toolsets.names():
        sel: dict[str, Any] = {"enabled": [name], "disabled": [], "disabled_tools": []}
        tools = sorted(system.available(**sel))
        members = sorted(system.toolsets.resolve([name]))
        hidden = system.hidden(**sel)
        chars, tokens = definitions_size(system.definitions(**sel, search="off"))
        comp = composites.get(name)
        plugin: str | None
        if comp is not None:
            plugin = comp.plugin
        else:
            first = system.registry.get(atomic[name][0])
            plugin = first.plugin if first is not None else None
        rows.append(
            {
                "name": name,
                "kind": "composite" if comp is not None else "atomic",
                "plugin": plugin,
                "description": comp.description if comp is not None else "",
                "includes": list(comp.includes) if comp is not None else [],
                "tools": tools,
                "members": members,
                "hidden": hidden,
                "chars": chars,
                "tokens_estimate": tokens,
            }
        )
    return rows


@click.command("toolsets")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
def toolsets_command(as_json: bool) -> None:
    """List toolsets with their resolved tools and the size of their definitions.

    Size is the length of the JSON definitions the model would be sent (characters), and an estimate
    in tokens (characters / 4). Plain columns: name, kind, tools available, members (registered tools of the
    set, available or hidden by their checks), chars, tokens, available tools.
    """
    system = get_state().system()
    rows = toolset_rows(system)
    chars, tokens = definitions_size(system.definitions(search="off"))
    selected: dict[str, Any] = {
        "tools": sorted(system.available()),
        "chars": chars,
        "tokens_estimate": tokens,
    }
    if as_json:
        emit_json(
            {
                "toolsets": rows,
                "selected": selected,
                "errors": [*system.toolset_errors, *system.toolsets.problems()],
                "tokens_estimate": f"characters / {CHARS_PER_TOKEN}",
            }
        )
        return
    emit_table(
        ["toolset", "kind", "tools", "members", "chars", "~tokens", "available tools"],
        [
            [
                r["name"],
                r["kind"],
                len(r["tools"]),
                len(r["members"]),
                r["chars"],
                r["tokens_estimate"],
                r["tools"],
            ]
            for r in rows
        ],
        title="Toolsets (tokens estimated as characters / 4)",
    )
    click.echo(
        f"selected by the configuration: {len(selected['tools'])} tools, {chars} chars, ~{tokens} tokens",
        err=True,
    )
    for problem in [*system.toolset_errors, *system.toolsets.problems()]:
        click.echo(f"hermes: warning: {problem}", err=True)


@click.group("schema")
def schema_group() -> None:
    """Tool definitions in each provider's format."""


@schema_group.command("export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["openai", "anthropic", "gemini", "mcp"]),
    default="openai",
    show_default=True,
    help="Provider format.",
)
@click.option(
    "--toolset", "toolset", metavar="T", help="Export this toolset instead of the configured selection."
)
def export_command(fmt: str, toolset: str | None) -> None:
    """Print the definitions the model would see as a JSON list (available tools only)."""
    system = get_state().system()
    if toolset:
        toolset_members(system, toolset)  # unknown names are a usage error
        emit_json(
            system.definitions(enabled=[toolset], disabled=[], disabled_tools=[], format=fmt, search="off")
        )
    else:
        emit_json(system.definitions(format=fmt, search="off"))
