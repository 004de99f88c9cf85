"""``search_files`` where the files are not on this host's disk (an SSH host): ``grep``/``find`` run there, through
the session's environment, and their answers are filtered here like the local engines' (hidden paths and files
the path guard would not let ``read_file`` read are never reported).

Patterns are POSIX extended regular expressions there (``grep -E``), names are shell globs (``find -name``);
``.git`` folders are skipped. The remote host needs GNU grep (``-Z``) and find.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ._search import MAX_COLLECT, Match, SearchError

if TYPE_CHECKING:
    from ._where import Where

__all__ = ["remote_search"]

_OUTPUT_BYTES = 16 * 1024 * 1024
_MAX_TEXT = 500


def remote_search(
    where: Where,
    pattern: str,
    target: str,
    *,
    case_sensitive: bool,
    file_glob: str | None,
    allowed: Callable[[str], bool],
    timeout: float,
) -> list[Match]:
    """What ``grep -rnIE`` (content) or ``find -name`` (files) finds below ``where`` there, sorted."""
    from hermes_core.sandbox import Limits

    if target == "content":
        argv = ["grep", "-rnIZE" + ("" if case_sensitive else "i"), "--exclude-dir=.git"]
        if file_glob:
            argv.append(f"--include={file_glob}")
        argv += ["--", pattern, where.path]
    elif target == "files":
        glob = pattern if any(ch in pattern for ch in "*?[") else f"*{pattern}*"
        argv = ["find", where.path, "-name", ".git", "-prune", "-o", "-type", "f"]
        argv += ["-name" if case_sensitive else "-iname", glob, "-print0"]
    else:
        raise SearchError(f"unknown target {target!r}; use 'content' or 'files'")
    result = where.env.run(
        argv, timeout=timeout, limits=Limits(max_output_bytes=_OUTPUT_BYTES), tool="search_files"
    )
    if result.timed_out:
        raise SearchError(f"the search took longer than {timeout:.0f}s; narrow the path or the pattern")
    if result.omitted:
        raise SearchError("the search found too much to list; narrow the path or the pattern")
    found = _content(result.output) if target == "content" else _files(result.output)
    if result.exit_code not in (0, 1) and not found:
        tail = result.output.strip().splitlines()[-1:] or [f"exit code {result.exit_code}"]
        raise SearchError(f"the search failed there: {tail[0]}")
    kept = [m for m in found if allowed(m.path)]
    return sorted(kept)[:MAX_COLLECT]


def _content(output: str) -> list[Match]:
    out = []
    for record in output.split("\n"):
        path, nul, rest = record.partition("\0")
        number, colon, text = rest.partition(":")
        if nul and colon and number.isdigit():
            out.append(Match(path, int(number), text[:_MAX_TEXT]))
    return out


def _files(output: str) -> list[Match]:
    return [Match(path) for path in output.split("\0") if path.startswith("/")]
