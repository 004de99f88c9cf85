"""Content search for ``search_files`` (and the engines and filters of its file listings, ``_listing``): ripgrep
when installed, pure Python otherwise.

Both engines follow the same rules, so they give the same results: .gitignore files (with those of
parent directories) are honoured, ``.git`` is skipped, hidden files are included, symbolic links are not
followed, files containing a NUL byte count as binary and are not searched, files over ``MAX_FILESIZE``
are skipped by content search, and only the first match of a line counts.

Safety: every search has a deadline. ripgrep (a linear-time regex engine) runs as a child process killed at
the deadline; the Python engine walks the tree here (globs match in polynomial time, see ``_gitignore``) and
runs its backtracking regex in a child process (``_grep_worker``) killed at the deadline, so no pattern can
hold this process. ``allowed(path)`` decides which files a caller may see: the Python engine never opens a
file it refuses (so even how long a search takes says nothing about them), and neither engine reports one.
"""

from __future__ import annotations

import codecs
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from ._gitignore import GlobError, IgnoreStack, glob_regex

if TYPE_CHECKING:
    import io

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_COLLECT",
    "Match",
    "SearchError",
    "find_content",
    "rg_available",
]

MAX_FILESIZE = 10 * 1024 * 1024
MAX_COLLECT = 50_000
MAX_LINE_CHARS = 500
MAX_PATTERN_CHARS = 10_000
DEFAULT_TIMEOUT = 30.0
_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_grep_worker.py")

Allowed = Callable[[str], bool]


class SearchError(ValueError):
    """A bad pattern or a failed search; the message is for the model."""


@dataclass(frozen=True, slots=True, order=True)
class Match:
    """One matching line (``line`` is 0 for file-name results)."""

    path: str
    line: int = 0
    text: str = ""


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left; raises ``SearchError`` once the time is up."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise self.error()
        return left

    def error(self) -> SearchError:
        return SearchError(
            f"the search took longer than {self.seconds:g}s and was stopped; narrow the path, the file_glob "
            "or the pattern (a regex with nested repeats such as (a+)+ can take exponential time)"
        )


def rg_available() -> str | None:
    """The ripgrep binary: the one installed with this package (the declared dependency), else from PATH."""
    scripts = sysconfig.get_path("scripts")
    for folder in dict.fromkeys([os.path.dirname(sys.executable), scripts]):
        candidate = os.path.join(folder, "rg.exe" if os.name == "nt" else "rg")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("rg")


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    if len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + " ...[truncated]"
    return text


class _Filter:
    def __init__(self, file_glob: str | None, root: str, ignore_case: bool = False) -> None:
        self.root = root.rstrip("/") + "/"
        try:
            self.regex = glob_regex(file_glob, ignore_case=ignore_case)[0] if file_glob else None
        except GlobError as exc:
            raise SearchError(f"{exc}: {(file_glob or '')[:80]!r}") from None

    def __call__(self, path: str) -> bool:
        if self.regex is None:
            return True
        rel = path[len(self.root) :] if path.startswith(self.root) else os.path.basename(path)
        return self.regex.match(rel) is not None


def walk(root: str, deadline: _Deadline | None = None) -> Iterator[str]:
    """Every non-ignored regular file below ``root`` (absolute paths), the fallback engine's walk, in ripgrep's
    own order (``rg --files --sort path``: each directory's entries by name, byte for byte, depth first)."""
    if os.path.isfile(root):
        yield root
        return
    # depth first: a stack of iterators over each open directory's sorted entries
    stack = [(_sorted_entries(root), IgnoreStack.for_root(root).enter(root))]
    seen = 0
    while stack:
        entries, rules = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        seen += 1
        if deadline is not None and seen % 256 == 0:
            deadline.left()
        if entry.name == ".git":
            continue
        try:
            if entry.is_symlink():
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if rules.ignored(entry.path, is_dir):
            continue
        if is_dir:
            stack.append((_sorted_entries(entry.path), rules.enter(entry.path)))
        elif entry.is_file(follow_symlinks=False):
            yield entry.path


def _sorted_entries(directory: str) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as found:
            entries = list(found)
    except OSError:
        return iter(())
    entries.sort(key=lambda e: os.fsencode(e.name))
    return iter(entries)


def _check_pattern(pattern: str) -> None:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise SearchError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
    if "\x00" in pattern:
        raise SearchError("the pattern contains a NUL character")


def _content_python(
    root: str, pattern: str, case_sensitive: bool, keep: _Filter, allowed: Allowed, deadline: _Deadline
) -> list[Match]:
    paths = []
    for path in walk(root, deadline):
        if not keep(path) or not allowed(path):
            continue
        try:
            if os.path.getsize(path) > MAX_FILESIZE:
                continue
        except OSError:
            continue
        paths.append(path)
    job = {
        "pattern": pattern,
        "ignore_case": not case_sensitive,
        "paths": paths,
        "max_filesize": MAX_FILESIZE,
        "max_collect": MAX_COLLECT,
        "max_line": MAX_LINE_CHARS,
    }
    worker = subprocess.Popen(
        [sys.executable, "-I", "-S", _WORKER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        stdout, stderr = worker.communicate(json.dumps(job).encode("ascii"), deadline.left())
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.communicate()
        raise deadline.error() from None
    except BaseException:
        worker.kill()
        worker.wait()
        raise
    out: list[Match] = []
    for raw in stdout.split(b"\n"):
        kind, _, rest = raw.partition(b"\t")
        if kind == b"M":
            index, number, text = rest.split(b"\t", 2)
            out.append(Match(paths[int(index)], int(number), text.decode("utf-8", "surrogateescape")))
        elif kind == b"E":
            raise SearchError(rest.decode("utf-8", "replace"))
    if worker.returncode != 0:
        detail = stderr.decode("utf-8", "replace").strip().splitlines()
        raise SearchError("the search failed" + (f": {detail[-1][:300]}" if detail else ""))
    return out


def _rg_base(rg: str) -> list[str]:
    return [
        rg,
        "--no-config",
        "--no-require-git",
        "--no-ignore-dot",
        "--no-ignore-exclude",
        "--no-ignore-global",
        "--hidden",
        "--glob",
        "!.git",
        "--color",
        "never",
    ]


def _run_rg(argv: list[str], deadline: _Deadline, sep: bytes) -> Generator[bytes, None, None]:
    """Records of ripgrep's output (split at ``sep``) as they come; ripgrep is killed at the deadline and
    when the caller stops early."""
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors)
        assert proc.stdout is not None
        timer = threading.Timer(deadline.left(), proc.kill)
        timer.daemon = True
        timer.start()
        produced = False
        try:
            pending = b""
            while chunk := cast("io.BufferedReader", proc.stdout).read1(1 << 16):
                produced = True
                records = (pending + chunk).split(sep)
                pending = records.pop()
                yield from records
            if pending:
                yield pending
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()
            proc.wait()
        if proc.returncode < 0:
            if time.monotonic() >= deadline.at - 0.01:
                raise deadline.error()
            raise SearchError(f"ripgrep was stopped by signal {-proc.returncode}")
        if proc.returncode == 2 and not produced:
            errors.seek(0)
            message = errors.read(64 * 1024).decode("utf-8", "replace").strip()
            if "regex" in message or "parse" in message:
                raise SearchError(f"invalid regular expression: {message[-800:]}")
            if message:
                raise SearchError(f"search failed: {message[-800:]}")


def _has_nul(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                return False
            fh.seek(0)
            while chunk := fh.read(1024 * 1024):
                if b"\x00" in chunk:
                    return True
    except OSError:
        return True
    return False


def _content_rg(
    rg: str,
    root: str,
    pattern: str,
    case_sensitive: bool,
    keep: _Filter,
    allowed: Allowed,
    deadline: _Deadline,
) -> list[Match]:
    argv = [*_rg_base(rg), "--max-filesize", str(MAX_FILESIZE), "--line-number", "--with-filename"]
    argv += ["--no-heading", "--null", "--case-sensitive" if case_sensitive else "--ignore-case"]
    # long lines arrive cut (we show at most MAX_LINE_CHARS characters of them anyway)
    argv += ["--max-columns", "4096", "--max-columns-preview"]
    argv += ["--regexp", pattern, "--", root]
    out: list[Match] = []
    checked: dict[str, bool] = {}
    records = _run_rg(argv, deadline, b"\n")
    try:
        for raw in records:
            name, sep, rest = raw.partition(b"\x00")
            if not sep:
                continue
            number, _, text = rest.partition(b":")
            path = os.fsdecode(name)
            if path not in checked:
                # ripgrep's engine runs in linear time, so its running time reveals nothing about the
                # content of a refused file; its lines are simply never reported
                checked[path] = keep(path) and allowed(path) and not _has_nul(path)
            if not checked[path]:
                continue
            out.append(Match(path, int(number), _clip(text.decode("utf-8", "replace"))))
            if len(out) >= MAX_COLLECT:
                break
    finally:
        records.close()
    return out


def _allow_all(path: str) -> bool:
    return True


def find_content(
    root: str,
    pattern: str,
    *,
    case_sensitive: bool = True,
    file_glob: str | None = None,
    engine: str = "auto",
    allowed: Allowed = _allow_all,
    timeout: float = DEFAULT_TIMEOUT,
) -> tuple[list[Match], str]:
    """Lines matching the regex ``pattern`` below ``root`` in files ``allowed`` accepts, sorted; returns
    (matches, engine used). Raises ``SearchError`` for a bad pattern or glob, or when ``timeout`` passes."""
    deadline = _Deadline(timeout)
    _check_pattern(pattern)
    keep = _Filter(file_glob, root)
    rg = rg_available() if engine in ("auto", "rg") else None
    if rg is not None:
        return sorted(_content_rg(rg, root, pattern, case_sensitive, keep, allowed, deadline)), "rg"
    return sorted(_content_python(root, pattern, case_sensitive, keep, allowed, deadline)), "python"


def _name_filter(pattern: str, root: str, case_sensitive: bool) -> _Filter:
    if not any(ch in pattern for ch in "*?["):
        pattern = f"*{pattern}*"
    return _Filter(pattern, root, ignore_case=not case_sensitive)
