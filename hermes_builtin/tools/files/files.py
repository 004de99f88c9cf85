"""The "file" toolset: ``read_file``, ``write_file``, ``patch`` and ``search_files``.

They act in the session's environment (``hermes_core.environments``: locally, the same view the sandbox gives
commands, ``/tmp`` included). Every path passes the path guard (``context.guard_path``) before it is touched;
relative paths are relative to the workspace. The environment resolves it and opens it beneath one of its roots
without following any symbolic link (``_where``), so neither a link nor ``..`` nor an absolute path reaches
outside the workspace, ``/tmp`` and the granted folders, even with the guard off, and a path swapped for a link
after the check fails instead of reaching elsewhere. Writes are atomic (temporary file in the same directory,
fsync for files up to ``[plugins.file] fsync_mb``, rename), so a failed or concurrent write never leaves a
half-written file. Big files are read a page at a time (``_paging``) and listed a page at a time (``_listing``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

if TYPE_CHECKING:
    from ._where import Where

__all__ = ["patch", "read_file", "register", "search_files", "write_file"]

DEFAULT_LIMIT = 500
MAX_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_PAGE_CHARS = 100_000
MAX_WRITE_CHARS = (
    32 * 1024 * 1024
)  # write_file's arguments, in characters (32 MB of plain text; JSON escapes count)
FORCE = "Overwrite even if it changed on disk since you last saw it."

READ_SCHEMA: dict[str, Any] = {
    "name": "read_file",
    "description": (
        "Read a text file as numbered lines (`     12|text`), one page at a time. Use offset/limit to page "
        "through long files; the footer gives the total line count and the next offset. Notebooks, .docx, .xlsx "
        "and PDF come as text; other binary files are described. Paths are relative to the workspace."
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
        "is atomic and syntax errors are reported. To change part of an existing file, use patch."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to write (relative to the workspace)."},
            "content": {"type": "string", "description": "The complete new content of the file."},
            "force": {"type": "boolean", "description": FORCE},
        },
        "required": ["path", "content"],
    },
}

PATCH_SCHEMA: dict[str, Any] = {
    "name": "patch",
    "description": (
        "Edit files; returns a unified diff. mode 'replace' (default): in `path`, old_string (copied from the "
        "file, matching once; indentation may differ) becomes new_string, or every match with replace_all. "
        "mode 'patch': apply `patch` to all files or none:\n"
        "*** Begin Patch\n*** Update File: a.py\n@@ def f():\n ctx\n-old\n+new\n"
        "*** Add File: b.txt\n+line\n*** Delete File: c.txt\n*** End Patch"
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["replace", "patch"]},
            "path": {"type": "string"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
            "replace_all": {"type": "boolean"},
            "patch": {"type": "string"},
            "force": {"type": "boolean", "description": FORCE},
        },
    },
}

SEARCH_SCHEMA: dict[str, Any] = {
    "name": "search_files",
    "description": (
        "Search the workspace (grep or find). target 'content' (default): lines matching the regex, as "
        "`path:line:text`. target 'files': paths matching a glob (`*.py`, `src/**/test_*.py`; a plain word "
        "matches names containing it). Honours .gitignore, skips .git and binary files. Sorted, paged with "
        "offset/limit."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regex (content) or glob (files)."},
            "target": {"type": "string", "enum": ["content", "files"]},
            "path": {"type": "string", "description": "Directory or file (default: the workspace)."},
            "file_glob": {"type": "string", "description": "Only files matching this glob, e.g. '*.py'."},
            "case_sensitive": {"type": "boolean", "description": "Default true."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 500, "description": "Default 50."},
            "offset": {"type": "integer", "minimum": 0},
        },
        "required": ["pattern"],
    },
}


def _guarded(context: CallContext, path: str, op: str) -> Where:
    from ._where import locate

    return locate(context, path, op)


def _open_failure(exc: OSError, where: Where, verb: str) -> ToolError:
    """The message for a file that could not be opened: missing, a directory, a device, swapped, or outside."""
    from hermes_core.environments import NotRegularFile as EnvNotRegular
    from hermes_core.environments import PathOutsideRoots, ReadOnlyPath
    from hermes_core.fileio import SymlinkError

    from ._fsio import NotRegularFile
    from ._where import outside_error

    shown = where.shown
    if isinstance(exc, FileNotFoundError):
        return _missing(where)
    if isinstance(exc, IsADirectoryError):
        return ToolError(f"{shown} is a directory; use search_files with target 'files' to list it")
    if isinstance(exc, (NotRegularFile, EnvNotRegular)):
        return ToolError(f"{shown} is not a regular file")
    if isinstance(exc, SymlinkError):
        return ToolError(
            f"{shown} changed while it was being opened (a symbolic link appeared in its path); nothing was {verb}"
        )
    if isinstance(exc, (PathOutsideRoots, ReadOnlyPath)):
        return outside_error(exc, shown, "read" if verb == "read" else "write")
    return ToolError(f"cannot read {shown}: {exc.strerror or exc}")


def _open_checked(where: Where) -> BinaryIO:
    try:
        return where.open()
    except OSError as exc:
        raise _open_failure(exc, where, "read") from None


def _write_failure(exc: OSError, shown: str) -> ToolError:
    from hermes_core.environments import PathOutsideRoots, ReadOnlyPath
    from hermes_core.fileio import SymlinkError

    from ._where import outside_error

    if isinstance(exc, IsADirectoryError):
        return ToolError(f"{shown} is a directory; give a file path")
    if isinstance(exc, SymlinkError):
        return ToolError(
            f"{shown} changed while it was being written (a symbolic link appeared in its path); nothing was "
            "written"
        )
    if isinstance(exc, (PathOutsideRoots, ReadOnlyPath)):
        return outside_error(exc, shown, "write")
    return ToolError(f"could not write {shown}: {exc.strerror or exc}; the file was left unchanged")


def _missing(where: Where) -> ToolError:
    import difflib

    hint = ""
    close = difflib.get_close_matches(where.pure.name, where.siblings(), n=3, cutoff=0.6)
    if close:
        hint = " Did you mean: " + ", ".join(close) + "?"
    return ToolError(f"file not found: {where.shown}.{hint}")


def read_file(path: str, offset: int = 1, limit: int = DEFAULT_LIMIT, *, context: CallContext) -> str:
    """A numbered page of a text file (see ``READ_SCHEMA``)."""
    from . import _stale
    from ._documents import document_kind, read_document

    where = _guarded(context, path, "read")
    target, shown = Path(where.path), where.shown
    offset = max(1, int(offset))
    limit = max(1, min(int(limit), MAX_LIMIT))
    with _open_checked(where) as raw:  # the checked file itself, whatever happens to the path now
        seen = where.host
        content = _stale.remember_fd(context, seen, raw.fileno()) if seen is not None else None
        kind = document_kind(target)
        if kind is not None:
            return read_document(context, kind, raw, target, shown, offset, limit)
        if content is not None:  # read whole for the stale-write digest: page those bytes, not a second read
            return _read_page(content, target, shown, offset, limit)
        return _read_page(raw, target, shown, offset, limit)


def _read_page(source: BinaryIO | bytes, target: Path, shown: str, offset: int, limit: int) -> str:
    from ._paging import PastTheEnd, read_page

    try:
        return read_page(source, target, shown, offset, limit)
    except PastTheEnd as end:
        raise ToolError(f"offset {offset} is past the end of {shown} ({end.total} lines)") from None
    except OSError as exc:
        raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from None


def write_file(path: str, content: str, force: bool = False, *, context: CallContext) -> str:
    """Write ``content`` to ``path`` atomically (see ``WRITE_SCHEMA``)."""
    from . import _stale
    from ._checks import format_gate

    where = _guarded(context, path, "write")
    shown = where.shown
    seen = where.host
    if seen is not None:
        _stale.check_fresh(context, seen, shown, force, "written")
    warning = format_gate(_config(context), where.pure, shown, content)
    sync = len(content) <= _fsync_limit(
        context
    )  # a big file is renamed into place without waiting for the disk
    try:  # streamed into the checked directory, beneath a root, or nowhere
        existed = where.env.write_text(where.path, content, sync=sync)
    except UnicodeEncodeError:
        raise ToolError("content contains invalid Unicode (lone surrogates); nothing was written") from None
    except OSError as exc:
        raise _write_failure(exc, shown) from None
    if seen is not None:
        small = len(content) <= _stale.DIGEST_LIMIT
        _stale.remember(context, seen, content.encode("utf-8") if small else None)
    verb = "replaced" if existed else "created"
    return f"{verb} {shown}: {_utf8_size(content)} bytes{_lines(content)}{warning}"


# Lines are counted for the result up to this many characters (half a millisecond): beyond, counting them
# would cost about what the whole write costs, for a figure the bytes already vouch for.
COUNT_LINES_UP_TO = 1 << 20


def _lines(content: str) -> str:
    """``", N lines"`` for the result of a write, or "" for a text over ``COUNT_LINES_UP_TO`` characters."""
    if len(content) > COUNT_LINES_UP_TO:
        return ""
    count = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    return f", {count} lines"


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


def _load_text(where: Where) -> tuple[str, str]:
    """The text of a file to patch and its encoding."""
    from hermes_core.environments import NotRegularFile as EnvNotRegular

    from ._fsio import NotRegularFile, read_text_from

    shown = where.shown
    try:
        with where.open() as fh:
            text, found = read_text_from(fh, where.pure)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(f"file not found: {shown}") from None
    except (IsADirectoryError, NotRegularFile, EnvNotRegular):
        raise ToolError(f"{shown} is not a regular file") from None
    except OSError as exc:
        raise _open_failure(exc, where, "changed") from None
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


def _replace(
    context: CallContext, path: str | None, old: str | None, new: str | None, every: bool, force: bool
) -> str:
    from . import _stale
    from ._checks import format_gate
    from ._patching import PatchError, replace_text, unified_diff

    if not path:
        raise ToolError("mode 'replace' needs path, old_string and new_string")
    if old is None or new is None:
        raise ToolError("mode 'replace' needs old_string and new_string")
    where = _guarded(context, path, "write")
    shown = where.shown
    seen = where.host
    if seen is not None:
        _stale.check_fresh(context, seen, shown, force, "changed")
    text, encoding = _load_text(where)
    try:
        result = replace_text(text, old, new, every)
    except PatchError as exc:
        raise ToolError(f"{shown}: {exc}") from None
    warning = format_gate(_config(context), where.pure, shown, result.text, text)
    data = _encode(result.text, encoding)
    try:
        where.env.write(where.path, data)
    except OSError as exc:
        raise _write_failure(exc, shown) from None
    if seen is not None:
        _stale.remember(context, seen, data)
    how = "" if result.strategy == "exact" else f", {result.strategy} match"
    plural = "s" if result.count != 1 else ""
    head = f"patched {shown}: {result.count} replacement{plural} at line {result.first_line}{how}"
    return head + warning + "\n" + unified_diff(shown, text, result.text)


def _apply_patch(context: CallContext, patch_text: str | None, force: bool = False) -> str:
    from . import _stale
    from ._checks import format_gate
    from ._patching import PatchError, apply_hunks, parse_patch, unified_diff

    if not patch_text or not patch_text.strip():
        raise ToolError("mode 'patch' needs the `patch` text")
    try:
        ops = parse_patch(patch_text)
    except PatchError as exc:
        raise ToolError(str(exc)) from None
    plan: list[tuple[str, Where, bytes | None, str, str]] = []  # kind, where, old bytes, before, after
    seen: set[str] = set()
    warnings: list[str] = []
    config = _config(context)
    for op in ops:
        where = _guarded(context, op.path, "write")
        shown = where.shown
        if where.path in seen:
            raise ToolError(f"{shown} appears more than once in the patch; merge its sections")
        seen.add(where.path)
        host = where.host
        if op.kind != "add" and host is not None:
            _stale.check_fresh(context, host, shown, force, "changed")
        if op.kind == "add":
            if where.exists():
                raise ToolError(f"cannot add {shown}: it already exists (use '*** Update File')")
            after = "\n".join(op.content) + ("\n" if op.content else "")
            warnings.append(format_gate(config, where.pure, shown, after))
            plan.append(("add", where, None, "", after))
            continue
        text, encoding = _load_text(where)
        try:
            with where.open() as fh:
                old_bytes = fh.read()  # kept to restore the file if a later write fails
        except OSError as exc:
            raise _open_failure(exc, where, "changed") from None
        if op.kind == "delete":
            plan.append(("delete", where, old_bytes, text, ""))
            continue
        try:
            after = apply_hunks(text, op.hunks, shown)
        except PatchError as exc:
            raise ToolError(f"{exc}. Nothing was changed.") from None
        warnings.append(format_gate(config, where.pure, shown, after, text))
        plan.append(("update:" + encoding, where, old_bytes, text, after))
    done: list[tuple[str, Where, bytes | None]] = []
    try:
        for kind, where, prior, _before, after in plan:
            host = where.host
            if kind == "delete":
                where.env.remove(where.path)
                if host is not None:
                    _stale.forget(context, host)
            else:
                data = _encode(after, kind.partition(":")[2] or "utf-8")
                where.env.write(where.path, data)
                if host is not None:
                    _stale.remember(context, host, data)
            done.append((kind, where, prior))
    except OSError as exc:
        _roll_back(done)
        failure = _write_failure(exc, where.shown).message
        raise ToolError(f"{failure}; every file was restored") from None
    parts = [f"applied patch: {len(plan)} file{'s' if len(plan) != 1 else ''}" + "".join(warnings)]
    for kind, where, _old, before, after in plan:
        parts.append(
            unified_diff(where.shown, before, after, created=kind == "add", deleted=kind == "delete")
        )
    return "\n".join(parts)


def _roll_back(done: list[tuple[str, Where, bytes | None]]) -> None:
    for kind, where, old_bytes in reversed(done):
        try:
            if kind == "add":
                where.env.remove(where.path)
            elif old_bytes is not None:
                where.env.write(where.path, old_bytes)
        except OSError:
            continue


def patch(
    mode: str = "replace",
    path: str | None = None,
    old_string: str | None = None,
    new_string: str | None = None,
    replace_all: bool = False,
    patch: str | None = None,
    force: bool = False,
    *,
    context: CallContext,
) -> str:
    """Edit files by find-and-replace or with a multi-file patch (see ``PATCH_SCHEMA``)."""
    if mode == "patch":
        return _apply_patch(context, patch, force)
    if mode != "replace":
        raise ToolError(f"unknown mode {mode!r}; use 'replace' or 'patch'")
    if patch and not path and old_string is None:
        return _apply_patch(context, patch, force)
    return _replace(context, path, old_string, new_string, replace_all, force)


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
    where = _guarded(context, path or ".", "read")
    try:
        found_root = where.exists()
    except OSError as exc:
        raise _open_failure(exc, where, "read") from None
    if not found_root:
        raise _missing(where)
    root = where.env.local_path(where.path)  # the engines search this host's disk, or run where the files are
    shown_root = where.shown
    to_env = _env_paths(where, root) if root is not None else str
    limit = max(1, min(int(limit), 500))
    offset = max(0, int(offset))
    config = _config(context)
    engine = str(config.get("search_engine", "auto"))
    timeout = _search_timeout(config.get("search_timeout"), DEFAULT_TIMEOUT)
    options: dict[str, Any] = {
        "case_sensitive": case_sensitive,
        "file_glob": file_glob,
        "engine": engine,
        "allowed": _search_visible(context, where, to_env),
        "timeout": timeout,
    }
    try:
        if root is None:
            from ._remote_search import remote_search

            found = remote_search(
                where,
                pattern,
                target,
                case_sensitive=case_sensitive,
                file_glob=file_glob,
                allowed=options["allowed"],
                timeout=timeout,
            )
        elif target == "files":
            return _listing_page(where, to_env, str(root), pattern, offset, limit, options)
        elif target == "content":
            found, _ = find_content(str(root), pattern, **options)
        else:
            raise ToolError(f"unknown target {target!r}; use 'content' or 'files'")
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
        lines = [_shown_found(where, to_env, m.path) for m in page]
    else:
        lines = [f"{_shown_found(where, to_env, m.path)}:{m.line}:{m.text}" for m in page]
    count = f"{total}+" if total >= MAX_COLLECT else str(total)
    footer = f"[{what} {offset + 1}-{offset + len(page)} of {count}"
    if offset + len(page) < total:
        footer += f"; next page: offset={offset + len(page)}"
    footer += "]"
    return "\n".join([*lines, footer])


def _listing_page(
    where: Where, to_env: Any, root: str, pattern: str, offset: int, limit: int, options: Any
) -> str:
    """One page of a file listing (``_listing``): the walk stops once the page is full."""
    from ._listing import list_files

    page = list_files(root, pattern, offset=offset, limit=limit, **options)
    if not page.paths:
        if page.total is not None and offset and offset >= page.total:
            raise ToolError(f"offset {offset} is past the last result ({page.total} files)")
        return f"no files for {pattern!r} in {where.shown}"
    last = offset + len(page.paths)
    footer = f"[files {offset + 1}-{last}"
    footer += f" of {page.total}]" if page.total is not None else f"; more follow, next page: offset={last}]"
    return "\n".join([*(_shown_found(where, to_env, p) for p in page.paths), footer])


def _search_timeout(value: Any, default: float) -> float:
    if value is None:
        return default
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ToolError("[plugins.file] search_timeout must be a number of seconds") from None
    return min(max(seconds, 0.1), 600.0)


def _env_paths(where: Where, root: Path) -> Any:
    """Host path of a found file -> its path in the environment (the engines search ``root`` on the host)."""
    host, env_root = str(root).rstrip("/"), where.path.rstrip("/")

    def to_env(found: str) -> str:
        return env_root + found[len(host) :] if found.startswith(host) else found

    return to_env


def _shown_found(where: Where, to_env: Any, found: str) -> str:
    from ._where import shown

    return shown(where.env, to_env(found))


def _search_visible(context: CallContext, where: Where, to_env: Any) -> Any:
    """A predicate: may a search look at this file? Nothing the environment hides, and its own read is allowed,
    or needs exactly the approval the search root already got (searching an approved folder outside the
    workspace shows its files, not the keys or .env files inside it). One ``PathJudge`` judges the whole search
    (``check_path``'s verdicts, the protected places computed and each directory resolved once)."""
    from hermes_core.security import PathJudge

    hidden = [h.rstrip("/") for h in where.env.hidden_within(where.path)]

    def reason(verdict: Any) -> str:
        return str(verdict.reason).rpartition(": ")[2]

    judge = PathJudge("read", context.workspace)
    view = where.env.host_view  # the guard judges an environment path where the host sees it
    try:
        root_verdict = judge.check(view(where.path))
    except ValueError:
        return lambda path: False
    approved_reason = reason(root_verdict) if root_verdict.decision == "ask" else None
    seen: dict[str, bool] = {}

    def visible(found: str) -> bool:
        known = seen.get(found)
        if known is not None:
            return known
        path = to_env(found)
        if any(path == h or path.startswith(h + "/") for h in hidden):
            seen[found] = False
            return False
        try:
            verdict = judge.check(view(path))
        except ValueError:
            ok = False
        else:
            ok = verdict.decision == "allow" or (
                verdict.decision == "ask"
                and approved_reason is not None
                and reason(verdict) == approved_reason
            )
        seen[found] = ok
        return ok

    return visible


def _config(context: CallContext) -> dict[str, Any]:
    try:
        cfg = context.plugin_config("file")
    except Exception:
        return {}
    return cfg if isinstance(cfg, dict) else {}


def _check(system: Any) -> tuple[bool, str] | Unavailable:
    """Hidden, with the reason, when the session environment cannot serve files (a remote kind that is down)."""
    from hermes_core.environments import configured_kind

    if configured_kind(system) == "local":  # local file operations need no backend: nothing to load or probe
        return True, ""
    from hermes_core.environments import environment_check

    return environment_check(system, files=True)


def register(registry: ToolRegistry) -> None:
    """Register the file tools (toolset "file")."""
    registry.register(
        name="read_file",
        toolset="file",
        schema=READ_SCHEMA,
        handler=read_file,
        check_fn=_check,
        emoji="📖",
        max_result_size_chars=MAX_PAGE_CHARS + 20_000,
        parallel_safe=True,
    )
    registry.register(
        name="write_file",
        toolset="file",
        schema=WRITE_SCHEMA,
        handler=write_file,
        check_fn=_check,
        emoji="✍️",
        max_result_size_chars=4000,
        max_argument_chars=MAX_WRITE_CHARS,  # files of many megabytes ([limits.tools.write_file] to change)
    )
    registry.register(
        name="patch",
        toolset="file",
        schema=PATCH_SCHEMA,
        handler=patch,
        check_fn=_check,
        emoji="🩹",
        max_result_size_chars=50_000,
    )
    registry.register(
        name="search_files",
        toolset="file",
        schema=SEARCH_SCHEMA,
        handler=search_files,
        check_fn=_check,
        emoji="🔎",
        max_result_size_chars=60_000,
        parallel_safe=True,
    )
