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
    prose: Sequence[str] | None = None,
) -> None:
    """Print rows: a table on a terminal, else one tab-separated line per row (no header line).

    Plain output keeps the column order of ``headers`` so scripts can rely on it. On a terminal the table fits
    its width without breaking a word: names and other short columns keep their width, the ``prose`` columns
    (by default the last one, and any that holds lists) wrap between words; a terminal too narrow even for that
    gets each row as a short block of ``header: value`` lines instead.
    """
    use_rich = is_terminal() if rich_output is None else rich_output
    if not use_rich:
        for row in rows:
            click.echo("\t".join(plain_cell(cell) for cell in row))
        return
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=sys.stdout, highlight=False)
    wrapping = set(prose) if prose is not None else {headers[-1]}
    wrapping |= {h for i, h in enumerate(headers) if any(isinstance(r[i], (list, tuple, set)) for r in rows)}
    cells = [[_rich_cell(cell) for cell in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    fixed = sum(w for h, w in zip(headers, widths, strict=True) if h not in wrapping)
    if fixed + 3 * (len(headers) - 1) + 2 + _MIN_PROSE * len(wrapping) > console.width:
        _emit_rows_and_prose(console.width, headers, cells, widths, title, wrapping)
        return
    table = Table(title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    for header, width in zip(headers, widths, strict=True):
        if header in wrapping:
            table.add_column(header, overflow="fold", ratio=1, min_width=min(width, _MIN_PROSE))
        else:
            table.add_column(header, no_wrap=True, min_width=width)
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))  # Text: plugin strings are never markup
    console.print(table)


_MIN_PROSE = 24  # the narrowest a wrapping column may be before the table turns into blocks


def _rich_cell(value: Any) -> str:
    """A cell for the terminal: like ``plain_cell``, but lists separated by ", " so they wrap between items."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(plain_cell(v) for v in value)
    return plain_cell(value)


def _emit_rows_and_prose(
    width: int,
    headers: Sequence[str],
    cells: Sequence[Sequence[str]],
    widths: Sequence[int],
    title: str | None,
    wrapping: set[str],
) -> None:
    """For a terminal too narrow for the table: as many short columns as fit aligned on one line, the others and
    each wrapping column on indented lines below the row, wrapped between words (a word longer than the line
    stays whole)."""
    import textwrap

    short = [i for i, h in enumerate(headers) if h not in wrapping]
    while len(short) > 1 and sum(widths[i] for i in short) + 2 * (len(short) - 1) > width:
        short.pop()  # the rightmost short column moves under its row
    below = [i for i in range(len(headers)) if i not in short]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(widths[i]) for i, v in zip(short, values, strict=True)).rstrip()

    def indented(text: str) -> list[str]:
        return textwrap.wrap(
            text,
            max(20, width - 4),
            initial_indent="    ",
            subsequent_indent="      ",
            break_long_words=False,
            break_on_hyphens=False,
        )

    for part in textwrap.wrap(title or "", width, break_long_words=False, break_on_hyphens=False):
        click.echo(click.style(part, bold=True))
    click.echo(click.style(line([headers[i] for i in short]), bold=True))
    for row in cells:
        click.echo(line([row[i] for i in short]))
        moved = "  ".join(f"{headers[i]}: {row[i]}" for i in below if headers[i] not in wrapping and row[i])
        for text in [moved, *(f"{headers[i]}: {row[i]}" for i in below if headers[i] in wrapping and row[i])]:
            for part in indented(text) if text else ():
                click.echo(part)
