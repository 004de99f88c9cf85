"""``hermes tools search QUERY``: rank the selected tools for a task, as ``tool_search`` does for the model."""

from __future__ import annotations

from typing import Any

import click

from ._output import emit_json, emit_table
from ._state import get_state

__all__ = ["search_command"]


@click.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--limit", "-n", default=5, show_default=True, type=click.IntRange(1, 100), help="Tools to show."
)
@click.option(
    "--toolset", "toolsets", multiple=True, help="Search these toolsets (default: the config's selection)."
)
@click.option("--deferred", is_flag=True, help="Only the tools the model would have to search for.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
def search_command(
    query: tuple[str, ...], limit: int, toolsets: tuple[str, ...], deferred: bool, as_json: bool
) -> None:
    """Find the tools that fit a task, best first (the ranker of tool_search, over the whole selection).

    Each row says whether the model is sent the tool every turn ("sent") or finds it with tool_search
    ("deferred"), under [tools] search and search_budget. Plain columns: rank, name, toolset, state, score,
    summary. Nothing is loaded into any session.
    """
    system = get_state().system()
    text = " ".join(query)
    enabled = list(toolsets) or None
    try:
        result = system.search_tools(text, limit=limit, enabled=enabled, load=False, everything=not deferred)
    except ValueError as err:  # an unknown toolset
        raise click.BadParameter(str(err), param_hint="--toolset") from None
    sent = {_name(d) for d in system.definitions(enabled)}
    rows: list[dict[str, Any]] = [
        {
            "rank": rank,
            "name": match.name,
            "toolset": match.toolset,
            "state": "sent" if match.name in sent else "deferred",
            "score": match.score,
            "summary": match.summary,
        }
        for rank, match in enumerate(result.matches, 1)
    ]
    if as_json:
        emit_json(
            {"query": text, "searched": result.searchable, "elapsed_ms": result.elapsed_ms, "tools": rows}
        )
        return
    if not rows:
        click.echo(f"No tool matched {text!r} among {result.searchable} tools.", err=True)
        raise SystemExit(1)
    emit_table(
        ["#", "tool", "toolset", "state", "score", "summary"],
        [[r["rank"], r["name"], r["toolset"], r["state"], f"{r['score']:.2f}", r["summary"]] for r in rows],
        title=f"{len(rows)} of {result.searchable} tools for {text!r} ({result.elapsed_ms:.2f} ms)",
    )


def _name(definition: dict[str, Any]) -> str:
    fn = definition.get("function")
    return str(fn.get("name") if isinstance(fn, dict) else definition.get("name"))
