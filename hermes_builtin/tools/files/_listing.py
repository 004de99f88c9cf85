"""File listings of ``search_files`` (target "files"), one page at a time.

A listing walks the tree in ripgrep's own order (``rg --files --sort path``: the entries of each directory
sorted by name, byte for byte, depth first) and stops as soon as it holds the page and one file more: page 1 of
a tree of 100,000 files costs what its first files cost, not the whole walk, and page 2 starts from the same
order. Without ripgrep, ``_search.walk`` walks in the same order with the same rules (``.gitignore`` files,
``.git`` skipped, hidden files kept, symbolic links not followed), so both engines list the same files in the
same order. The total is known when the walk reached the end before the page was full; otherwise the listing says
more follow.

Which files a caller may see is ``allowed(path)`` (``search_files`` passes a ``hermes_core.security.PathJudge``):
it is asked only for names that match, and only until the page is full.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass

from ._search import _Deadline, _Filter, _name_filter, _rg_base, _run_rg, rg_available, walk

__all__ = ["Page", "list_files"]

Allowed = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing: its ``paths``, whether ``more`` follow, the ``total`` when the walk reached the
    end (None otherwise), and the ``engine`` that walked ("rg" or "python")."""

    paths: list[str]
    more: bool
    total: int | None
    engine: str


def list_files(
    root: str,
    pattern: str,
    *,
    offset: int,
    limit: int,
    case_sensitive: bool = True,
    file_glob: str | None = None,
    engine: str = "auto",
    allowed: Allowed,
    timeout: float,
) -> Page:
    """The files ``offset`` to ``offset + limit`` (0-based) below ``root`` whose name (or path, for globs with
    ``/``) matches ``pattern`` and that ``allowed`` accepts. Raises ``SearchError`` for a bad glob or when
    ``timeout`` passes before the page is full."""
    deadline = _Deadline(timeout)
    keep = _name_filter(pattern, root, case_sensitive)
    extra = _Filter(file_glob, root)
    rg = rg_available() if engine in ("auto", "rg") else None
    records: Generator[bytes, None, None] | None = None
    if rg is not None:
        argv = [*_rg_base(rg), "--files", "--sort", "path", "--null", "--", root]
        records = _run_rg(argv, deadline, b"\x00")
        listing: Iterator[str] = (os.fsdecode(p) for p in records)
        used = "rg"
    else:
        listing = walk(root, deadline)
        used = "python"
    paths: list[str] = []
    accepted = 0
    seen = 0
    try:
        for path in listing:
            seen += 1
            if seen % 256 == 0:
                deadline.left()
            if not (keep(path) and extra(path) and allowed(path)):
                continue
            accepted += 1
            if accepted > offset + limit:
                return Page(paths, True, None, used)  # the page and one more: enough to say more follow
            if accepted > offset:
                paths.append(path)
    finally:
        for gen in (listing, records):
            close = getattr(gen, "close", None)
            if close is not None:
                close()  # stops ripgrep at once
    return Page(paths, False, accepted, used)
