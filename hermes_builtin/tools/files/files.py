"""The "file" toolset: ``read_file``, ``write_file``, ``patch`` and ``search_files``.

Every path passes the path guard (``context.guard_path``) before it is touched; relative paths are
relative to the workspace. The resolved path the guard checked is then opened without following any symbolic
link (``hermes_core.fileio``), so a path swapped for a link after the check fails instead of reaching
elsewhere. Writes are atomic (temporary file in the same directory, fsync for files up to ``[plugins.file]
fsync_mb``, rename), so a failed or concurrent write never leaves a half-written file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

from hermes_core import CallContext, ToolError, ToolRegistry

__all__ = ["patch", "read_file", "register", "search_files", "write_file"]

DEFAULT_LIMIT = 500
MAX_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_PAGE_CHARS = 100_000
MAX_WRITE_CHARS = (
    32 * 1024 * 1024
)  # the arguments of write_file, in characters (16 MB of text with room for JSON)

READ_SCHEMA: dict[str, Any] = {
    "name": "read_file",
    "description": (
        "Read a text file as numbered lines (`     12|text`), one page at a time. Use offset/limit to page "
        "through long files; the footer gives the total line count and the next offset. Binary files are "
        "described, not dumped. Paths are relative to the workspace."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to read."},
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "First line to show, 1-based (default 1).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "description": f"Number of lines (default {DEFAULT_LIMIT}, max {MAX_LIMIT}).",
            },
        },
        "required": ["path"],
    },
}

WRITE_SCHEMA: dict[str, Any] = {
    "name": "write_file",
    "description": (
        "Create or overwrite a file with the given content (UTF-8), creating parent directories. The write "
        "is atomic. To change part of an existing file, use patch instead."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to write (relative to the workspace)."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
    },
}

PATCH_SCHEMA: dict[str, Any] = {
    "name": "patch",
    "description": (
        "Edit files and get a unified diff back. mode 'replace' (default): replace old_string with new_string "
        "in `path`; old_string must match exactly once (whitespace/indentation differences are tolerated and "
        "the replacement re-indented), or set replace_all. mode 'patch': apply `patch`, all files or none:\n"
        "*** Begin Patch\n*** Update File: a.py\n@@ def f():   (optional anchor line)\n ctx\n-old\n+new\n"
        "*** Add File: b.txt\n+line\n*** Delete File: c.txt\n*** End Patch"
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["replace", "patch"], "description": "Default 'replace'."},
            "path": {"type": "string", "description": "replace: the file to edit."},
            "old_string": {
                "type": "string",
                "description": "replace: the text to find (copy it from the file).",
            },
            "new_string": {"type": "string", "description": "replace: the text to put instead."},
            "replace_all": {
                "type": "boolean",
                "description": "replace: change every occurrence (default false).",
            },
            "patch": {"type": "string", "description": "patch: the patch text in the format above."},
        },
    },
}

SEARCH_SCHEMA: dict[str, Any] = {
    "name": "search_files",
    "description": (
        "Search the workspace. target 'content' (default): lines matching a regex, as `path:line:text`. "
        "target 'files': file paths matching a glob (`*.py`, `src/**/test_*.py`; a plain word matches names "
        "containing it). Honours .gitignore, skips .git and binary files. Results are sorted and paged with "
        "offset/limit."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regex (content) or glob (files)."},
            "target": {"type": "string", "enum": ["content", "files"], "description": "Default 'content'."},
            "path": {
                "type": "string",
                "description": "Directory or file to search (default: the workspace).",
            },
            "file_glob": {
                "type": "string",
                "description": "Only search files matching this glob, e.g. '*.py'.",
            },
            "case_sensitive": {"type": "boolean", "description": "Default true."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 500,
                "description": "Results per page (default 50).",
            },
            "offset": {"type": "integer", "minimum": 0, "description": "Results to skip (default 0)."},
        },
        "required": ["pattern"],
    },
}


def _abs(context: CallContext, path: str) -> Path:
    if not path or not path.strip():
        raise ToolError("path is empty")
    if "\x00" in path:
        raise ToolError("path contains a NUL byte")
    raw = Path(os.path.expanduser(path))
    return raw if raw.is_absolute() else Path(context.workspace) / raw


def _shown(context: CallContext, path: Path) -> str:
    """How a path is shown to the model: relative to the workspace when inside it."""
    try:
        return path.relative_to(Path(context.workspace).resolve()).as_posix()
    except ValueError:
        try:
            return path.relative_to(Path(context.workspace)).as_posix()
        except ValueError:
            return str(path)


def _guarded(context: CallContext, path: str, op: str) -> Path:
    return Path(context.guard_path(_abs(context, path), op))


def _open_failure(exc: OSError, shown: str, path: Path, verb: str) -> ToolError:
    """The message for a file that could not be opened: missing, a directory, a device, or swapped."""
    from hermes_core.fileio import SymlinkError

    from ._fsio import NotRegularFile

    if isinstance(exc, FileNotFoundError):
        return _missing(path, shown)
    if isinstance(exc, IsADirectoryError):
        return ToolError(f"{shown} is a directory; use search_files with target 'files' to list it")
    if isinstance(exc, NotRegularFile):
        return ToolError(f"{shown} is not a regular file")
    if isinstance(exc, SymlinkError):
        return ToolError(
            f"{shown} changed while it was being opened (a symbolic link appeared in its path); nothing was {verb}"
        )
    return ToolError(f"cannot read {shown}: {exc.strerror or exc}")


def _open_checked(path: Path, shown: str) -> BinaryIO:
    from ._fsio import open_regular

    try:
        return open_regular(path)
    except OSError as exc:
        raise _open_failure(exc, shown, path, "read") from None


def _write_failure(exc: OSError, shown: str) -> ToolError:
    from hermes_core.fileio import SymlinkError

    if isinstance(exc, IsADirectoryError):
        return ToolError(f"{shown} is a directory; give a file path")
    if isinstance(exc, SymlinkError):
        return ToolError(
            f"{shown} changed while it was being written (a symbolic link appeared in its path); nothing was "
            "written"
        )
    return ToolError(f"could not write {shown}: {exc.strerror or exc}; the file was left unchanged")


def _missing(path: Path, shown: str) -> ToolError:
    import difflib

    hint = ""
    try:
        siblings = [p.name for p in path.parent.iterdir()] if path.parent.is_dir() else []
        close = difflib.get_close_matches(path.name, siblings, n=3, cutoff=0.6)
        if close:
            hint = " Did you mean: " + ", ".join(close) + "?"
    except OSError:
        pass
    return ToolError(f"file not found: {shown}.{hint}")


def read_file(path: str, offset: int = 1, limit: int = DEFAULT_LIMIT, *, context: CallContext) -> str:
    """A numbered page of a text file (see ``READ_SCHEMA``)."""
    target = _guarded(context, path, "read")
    shown = _shown(context, target)
    offset = max(1, int(offset))
    limit = max(1, min(int(limit), MAX_LIMIT))
    with _open_checked(target, shown) as raw:  # the checked file itself, whatever happens to the path now
        return _read_page(raw, target, shown, offset, limit)


def _read_page(raw: BinaryIO, target: Path, shown: str, offset: int, limit: int) -> str:
    from ._paging import PastTheEnd, read_page

    try:
        return read_page(raw, target, shown, offset, limit)
    except PastTheEnd as end:
        raise ToolError(f"offset {offset} is past the end of {shown} ({end.total} lines)") from None
    except OSError as exc:
        raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from None


def write_file(path: str, content: str, *, context: CallContext) -> str:
    """Write ``content`` to ``path`` atomically (see ``WRITE_SCHEMA``)."""
    from hermes_core.fileio import atomic_write_nofollow

    target = _guarded(context, path, "write")
    shown = _shown(context, target)
    sync = len(content) <= _fsync_limit(
        context
    )  # a big file is renamed into place without waiting for the disk
    try:  # streamed into the checked directory, or nowhere
        existed = atomic_write_nofollow(target, content, fsync=sync)
    except UnicodeEncodeError:
        raise ToolError("content contains invalid Unicode (lone surrogates); nothing was written") from None
    except OSError as exc:
        raise _write_failure(exc, shown) from None
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "replaced" if existed else "created"
    return f"{verb} {shown}: {_utf8_size(content)} bytes, {lines} lines"


def _fsync_limit(context: CallContext) -> float:
    """Files up to ``[plugins.file] fsync_mb`` megabytes (default 1) are synced to disk before they replace the
    old one; bigger ones are still written atomically, without waiting for the disk (seconds for a big file)."""
    value = _config(context).get("fsync_mb", 1)
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise ToolError("[plugins.file] fsync_mb must be a number of megabytes (0: never sync)")
    return float(value) * 1_000_000


def _utf8_size(text: str) -> int:
    """The size of ``text`` in UTF-8, without a whole encoded copy (ASCII: its length)."""
    if text.isascii():
        return len(text)
    step = 1 << 20
    return sum(len(text[i : i + step].encode("utf-8", "surrogatepass")) for i in range(0, len(text), step))


def _load_text(target: Path, shown: str) -> tuple[str, str]:
    """The text of a file to patch and its encoding."""
    from ._fsio import NotRegularFile, read_text

    try:
        text, found = read_text(target)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(f"file not found: {shown}") from None
    except (IsADirectoryError, NotRegularFile):
        raise ToolError(f"{shown} is not a regular file") from None
    except OSError as exc:
        raise _open_failure(exc, shown, target, "changed") from None
    except ValueError as exc:
        raise ToolError(f"{shown} is a {exc}; patch edits text files only") from None
    encoding = found.encoding or "utf-8"
    return text, "utf-8" if encoding == "latin-1" else encoding


def _encode(text: str, encoding: str) -> bytes:
    try:
        return text.encode(encoding if encoding in ("utf-16", "utf-32", "utf-8-sig") else "utf-8")
    except UnicodeEncodeError:
        raise ToolError(
            "the new text contains invalid Unicode (lone surrogates); nothing was changed"
        ) from None


def _replace(context: CallContext, path: str | None, old: str | None, new: str | None, every: bool) -> str:
    from hermes_core.fileio import atomic_write_nofollow

    from ._patching import PatchError, replace_text, unified_diff

    if not path:
        raise ToolError("mode 'replace' needs path, old_string and new_string")
    if old is None or new is None:
        raise ToolError("mode 'replace' needs old_string and new_string")
    target = _guarded(context, path, "write")
    shown = _shown(context, target)
    text, encoding = _load_text(target, shown)
    try:
        result = replace_text(text, old, new, every)
    except PatchError as exc:
        raise ToolError(f"{shown}: {exc}") from None
    try:
        atomic_write_nofollow(target, _encode(result.text, encoding))
    except OSError as exc:
        raise _write_failure(exc, shown) from None
    how = "" if result.strategy == "exact" else f", {result.strategy} match"
    plural = "s" if result.count != 1 else ""
    head = f"patched {shown}: {result.count} replacement{plural} at line {result.first_line}{how}"
    return head + "\n" + unified_diff(shown, text, result.text)


def _apply_patch(context: CallContext, patch_text: str | None) -> str:
    from hermes_core.fileio import atomic_write_nofollow, unlink_nofollow

    from ._fsio import read_bytes
    from ._patching import PatchError, apply_hunks, parse_patch, unified_diff

    if not patch_text or not patch_text.strip():
        raise ToolError("mode 'patch' needs the `patch` text")
    try:
        ops = parse_patch(patch_text)
    except PatchError as exc:
        raise ToolError(str(exc)) from None
    plan: list[
        tuple[str, Path, str, bytes | None, str, str]
    ] = []  # kind, path, shown, old bytes, before, after
    seen: set[Path] = set()
    for op in ops:
        target = _guarded(context, op.path, "write")
        shown = _shown(context, target)
        if target in seen:
            raise ToolError(f"{shown} appears more than once in the patch; merge its sections")
        seen.add(target)
        if op.kind == "add":
            if os.path.lexists(target):
                raise ToolError(f"cannot add {shown}: it already exists (use '*** Update File')")
            after = "\n".join(op.content) + ("\n" if op.content else "")
            plan.append(("add", target, shown, None, "", after))
            continue
        text, encoding = _load_text(target, shown)
        try:
            old_bytes = read_bytes(target)  # kept to restore the file if a later write fails
        except OSError as exc:
            raise _open_failure(exc, shown, target, "changed") from None
        if op.kind == "delete":
            plan.append(("delete", target, shown, old_bytes, text, ""))
            continue
        try:
            after = apply_hunks(text, op.hunks, shown)
        except PatchError as exc:
            raise ToolError(f"{exc}. Nothing was changed.") from None
        plan.append(("update:" + encoding, target, shown, old_bytes, text, after))
    done: list[tuple[str, Path, bytes | None]] = []
    try:
        for kind, target, _shown_path, prior, _before, after in plan:
            if kind == "delete":
                unlink_nofollow(target)
            else:
                encoding = kind.partition(":")[2] or "utf-8"
                atomic_write_nofollow(target, _encode(after, encoding))
            done.append((kind, target, prior))
    except OSError as exc:
        _roll_back(done)
        raise ToolError(f"could not write {target}: {exc.strerror or exc}; every file was restored") from None
    parts = [f"applied patch: {len(plan)} file{'s' if len(plan) != 1 else ''}"]
    for kind, _target, shown, _old, before, after in plan:
        parts.append(unified_diff(shown, before, after, created=kind == "add", deleted=kind == "delete"))
    return "\n".join(parts)


def _roll_back(done: list[tuple[str, Path, bytes | None]]) -> None:
    from hermes_core.fileio import atomic_write_nofollow, unlink_nofollow

    for kind, target, old_bytes in reversed(done):
        try:
            if kind == "add":
                unlink_nofollow(target)
            elif old_bytes is not None:
                atomic_write_nofollow(target, old_bytes)
        except OSError:
            continue


def patch(
    mode: str = "replace",
    path: str | None = None,
    old_string: str | None = None,
    new_string: str | None = None,
    replace_all: bool = False,
    patch: str | None = None,
    *,
    context: CallContext,
) -> str:
    """Edit files by find-and-replace or with a multi-file patch (see ``PATCH_SCHEMA``)."""
    if mode == "patch":
        return _apply_patch(context, patch)
    if mode != "replace":
        raise ToolError(f"unknown mode {mode!r}; use 'replace' or 'patch'")
    if patch and not path and old_string is None:
        return _apply_patch(context, patch)
    return _replace(context, path, old_string, new_string, replace_all)


def search_files(
    pattern: str,
    target: str = "content",
    path: str = ".",
    file_glob: str | None = None,
    case_sensitive: bool = True,
    limit: int = 50,
    offset: int = 0,
    *,
    context: CallContext,
) -> str:
    """Search file contents or names (see ``SEARCH_SCHEMA``).

    Files the path guard would refuse to read, or ask about (unless the search root itself was approved for
    the same reason), are never searched by the Python engine and never reported by either engine, and the
    answer does not say they exist: a search must not become an oracle on a file ``read_file`` would guard.
    """
    from ._search import DEFAULT_TIMEOUT, MAX_COLLECT, SearchError, find_content

    if not pattern:
        raise ToolError("pattern is empty")
    root = _guarded(context, path or ".", "read")
    shown_root = _shown(context, root)
    if not root.exists():
        raise _missing(root, shown_root)
    limit = max(1, min(int(limit), 500))
    offset = max(0, int(offset))
    config = _config(context)
    engine = str(config.get("search_engine", "auto"))
    timeout = _search_timeout(config.get("search_timeout"), DEFAULT_TIMEOUT)
    options: dict[str, Any] = {
        "case_sensitive": case_sensitive,
        "file_glob": file_glob,
        "engine": engine,
        "allowed": _search_visible(context, root),
        "timeout": timeout,
    }
    try:
        if target == "files":
            return _listing_page(context, root, shown_root, pattern, offset, limit, options)
        if target != "content":
            raise ToolError(f"unknown target {target!r}; use 'content' or 'files'")
        found, _ = find_content(str(root), pattern, **options)
    except SearchError as exc:
        raise ToolError(str(exc)) from None
    total = len(found)
    what = "files" if target == "files" else "matches"
    if not total:
        return f"no {what} for {pattern!r} in {shown_root}"
    if offset >= total:
        raise ToolError(f"offset {offset} is past the last result ({total} {what})")
    page = found[offset : offset + limit]
    if target == "files":
        lines = [_shown(context, Path(m.path)) for m in page]
    else:
        lines = [f"{_shown(context, Path(m.path))}:{m.line}:{m.text}" for m in page]
    count = f"{total}+" if total >= MAX_COLLECT else str(total)
    footer = f"[{what} {offset + 1}-{offset + len(page)} of {count}"
    if offset + len(page) < total:
        footer += f"; next page: offset={offset + len(page)}"
    footer += "]"
    return "\n".join([*lines, footer])


def _listing_page(
    context: CallContext, root: Path, shown_root: str, pattern: str, offset: int, limit: int, options: Any
) -> str:
    """One page of a file listing (``_listing``): the walk stops once the page is full."""
    from ._listing import list_files

    page = list_files(str(root), pattern, offset=offset, limit=limit, **options)
    if not page.paths:
        if page.total is not None and offset and offset >= page.total:
            raise ToolError(f"offset {offset} is past the last result ({page.total} files)")
        return f"no files for {pattern!r} in {shown_root}"
    last = offset + len(page.paths)
    footer = f"[files {offset + 1}-{last}"
    footer += f" of {page.total}]" if page.total is not None else f"; more follow, next page: offset={last}]"
    return "\n".join([*(_shown(context, Path(p)) for p in page.paths), footer])


def _search_timeout(value: Any, default: float) -> float:
    if value is None:
        return default
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ToolError("[plugins.file] search_timeout must be a number of seconds") from None
    return min(max(seconds, 0.1), 600.0)


def _search_visible(context: CallContext, root: Path) -> Any:
    """A predicate: may a search look at this file? Its own read is allowed, or needs exactly the approval
    the search root already got (searching an approved folder outside the workspace shows its files, not the
    keys or .env files inside it). One ``PathJudge`` judges the whole search (``check_path``'s verdicts, the
    protected places computed and each directory resolved once)."""
    from hermes_core.security import PathJudge

    def reason(verdict: Any) -> str:
        return str(verdict.reason).rpartition(": ")[2]

    judge = PathJudge("read", context.workspace)
    try:
        root_verdict = judge.check(root)
    except ValueError:
        return lambda path: False
    approved_reason = reason(root_verdict) if root_verdict.decision == "ask" else None

    def visible(path: str) -> bool:
        try:
            verdict = judge.check(path)
        except ValueError:
            return False
        return verdict.decision == "allow" or (
            verdict.decision == "ask" and approved_reason is not None and reason(verdict) == approved_reason
        )

    return visible


def _config(context: CallContext) -> dict[str, Any]:
    try:
        cfg = context.plugin_config("file")
    except Exception:
        return {}
    return cfg if isinstance(cfg, dict) else {}


def register(registry: ToolRegistry) -> None:
    """Register the file tools (toolset "file")."""
    registry.register(
        name="read_file",
        toolset="file",
        schema=READ_SCHEMA,
        handler=read_file,
        emoji="📖",
        max_result_size_chars=MAX_PAGE_CHARS + 20_000,
        parallel_safe=True,
    )
    registry.register(
        name="write_file",
        toolset="file",
        schema=WRITE_SCHEMA,
        handler=write_file,
        emoji="✍️",
        max_result_size_chars=4000,
        max_argument_chars=MAX_WRITE_CHARS,  # files of many megabytes ([limits.tools.write_file] to change)
    )
    registry.register(
        name="patch",
        toolset="file",
        schema=PATCH_SCHEMA,
        handler=patch,
        emoji="🩹",
        max_result_size_chars=50_000,
    )
    registry.register(
        name="search_files",
        toolset="file",
        schema=SEARCH_SCHEMA,
        handler=search_files,
        emoji="🔎",
        max_result_size_chars=60_000,
        parallel_safe=True,
    )
