"""How commands print: rich tables on a terminal, stable tab-separated lines when piped, JSON on request."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click

__all__ = ["emit_json", "emit_table", "is_terminal", "plain_cell"]


def is_terminal() -> bool:
    """True when stdout is an interactive terminal (rich output); False when piped or captured."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def emit_json(data: Any) -> None:
    """Print ``data`` as one JSON document on stdout, and nothing else."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def plain_cell(value: Any) -> str:
    """One cell of plain output: lists joined by commas, None empty, tabs and newlines flattened."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    seq = isinstance(value, (list, tuple, set, frozenset))
    text = ",".join(str(v) for v in value) if seq else str(value)
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def emit_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    title: str | None = None,
    rich_output: bool | None = None,
) -> None:
    """Print rows: a rich table on a terminal, else one tab-separated line per row (no header line).

    Plain output keeps the column order of ``headers`` so scripts can rely on it.
    """
    use_rich = is_terminal() if rich_output is None else rich_output
    if not use_rich:
        for row in rows:
            click.echo("\t".join(plain_cell(cell) for cell in row))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left", header_style="bold")
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*(Text(plain_cell(cell)) for cell in row))  # Text: plugin strings are never markup
    Console(file=sys.stdout, highlight=False).print(table)
