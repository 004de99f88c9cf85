"""Content and file-name search for ``search_files``: ripgrep when installed, pure Python otherwise.

Both engines follow the same rules, so they give the same results: .gitignore files (with those of
parent directories) are honoured, ``.git`` is skipped, hidden files are included, symbolic links are not
followed, files containing a NUL byte count as binary and are not searched, files over ``MAX_FILESIZE``
are skipped by content search, and only the first match of a line counts.
"""

from __future__ import annotations

import codecs
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from ._gitignore import IgnoreStack, glob_regex

__all__ = ["MAX_COLLECT", "Match", "SearchError", "find_content", "find_files", "rg_available"]

MAX_FILESIZE = 10 * 1024 * 1024
MAX_COLLECT = 50_000
MAX_LINE_CHARS = 500
_RG_TIMEOUT = 60.0


class SearchError(ValueError):
    """A bad pattern or a failed search; the message is for the model."""


@dataclass(frozen=True, slots=True, order=True)
class Match:
    """One matching line (``line`` is 0 for file-name results)."""

    path: str
    line: int = 0
    text: str = ""


def rg_available() -> str | None:
    return shutil.which("rg")


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    if len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + " ...[truncated]"
    return text


class _Filter:
    def __init__(self, file_glob: str | None, root: str, ignore_case: bool = False) -> None:
        self.root = root.rstrip("/") + "/"
        self.regex = glob_regex(file_glob, ignore_case=ignore_case)[0] if file_glob else None

    def __call__(self, path: str) -> bool:
        if self.regex is None:
            return True
        rel = path[len(self.root) :] if path.startswith(self.root) else os.path.basename(path)
        return self.regex.match(rel) is not None


def walk(root: str) -> Iterator[str]:
    """Every non-ignored regular file below ``root`` (absolute paths), the fallback engine's walk."""
    if os.path.isfile(root):
        yield root
        return
    stack: list[tuple[str, IgnoreStack]] = [(root, IgnoreStack.for_root(root).enter(root))]
    while stack:
        directory, rules = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
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
                stack.append((entry.path, rules.enter(entry.path)))
            elif entry.is_file(follow_symlinks=False):
                yield entry.path


def _decode_lines(data: bytes) -> list[str] | None:
    """The lines of a file, or None when it is binary (a NUL byte outside UTF-16/32 text)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", "replace").split("\n")
    if b"\x00" in data:
        return None
    if data.startswith(codecs.BOM_UTF8):
        data = data[3:]
    return data.decode("utf-8", "replace").split("\n")


def _compile(pattern: str, case_sensitive: bool) -> re.Pattern[str]:
    try:
        return re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)
    except re.error as exc:
        raise SearchError(f"invalid regular expression {pattern!r}: {exc}") from None


def _content_python(root: str, pattern: str, case_sensitive: bool, keep: _Filter) -> list[Match]:
    regex = _compile(pattern, case_sensitive)
    out: list[Match] = []
    for path in walk(root):
        if not keep(path):
            continue
        try:
            if os.path.getsize(path) > MAX_FILESIZE:
                continue
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        lines = _decode_lines(data)
        if lines is None:
            continue
        if lines and lines[-1] == "":
            lines.pop()
        for number, line in enumerate(lines, 1):
            if regex.search(line):
                out.append(Match(path, number, _clip(line)))
                if len(out) >= MAX_COLLECT:
                    return out
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


def _run_rg(argv: list[str]) -> bytes:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=_RG_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SearchError(
            f"the search took longer than {_RG_TIMEOUT:.0f}s; narrow the path or pattern"
        ) from None
    if done.returncode == 2 and not done.stdout:
        message = done.stderr.decode("utf-8", "replace").strip()
        if "regex" in message or "parse" in message:
            raise SearchError(f"invalid regular expression: {message[-800:]}")
        if message:
            raise SearchError(f"search failed: {message[-800:]}")
    return done.stdout


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


def _content_rg(rg: str, root: str, pattern: str, case_sensitive: bool, keep: _Filter) -> list[Match]:
    argv = [*_rg_base(rg), "--max-filesize", str(MAX_FILESIZE), "--line-number", "--with-filename"]
    argv += ["--no-heading", "--null", "--case-sensitive" if case_sensitive else "--ignore-case"]
    argv += ["--regexp", pattern, "--", root]
    out: list[Match] = []
    checked: dict[str, bool] = {}
    for raw in _run_rg(argv).split(b"\n"):
        if not raw:
            continue
        name, sep, rest = raw.partition(b"\x00")
        if not sep:
            continue
        number, _, text = rest.partition(b":")
        path = os.fsdecode(name)
        if not keep(path):
            continue
        if path not in checked:
            checked[path] = _has_nul(path)
        if checked[path]:
            continue
        out.append(Match(path, int(number), _clip(text.decode("utf-8", "replace"))))
        if len(out) >= MAX_COLLECT:
            break
    return out


def find_content(
    root: str,
    pattern: str,
    *,
    case_sensitive: bool = True,
    file_glob: str | None = None,
    engine: str = "auto",
) -> tuple[list[Match], str]:
    """Lines matching the regex ``pattern`` below ``root``, sorted; returns (matches, engine used)."""
    keep = _Filter(file_glob, root)
    rg = rg_available() if engine in ("auto", "rg") else None
    if rg is not None:
        return sorted(_content_rg(rg, root, pattern, case_sensitive, keep)), "rg"
    return sorted(_content_python(root, pattern, case_sensitive, keep)), "python"


def _name_filter(pattern: str, root: str, case_sensitive: bool) -> _Filter:
    if not any(ch in pattern for ch in "*?["):
        pattern = f"*{pattern}*"
    return _Filter(pattern, root, ignore_case=not case_sensitive)


def find_files(
    root: str,
    pattern: str,
    *,
    case_sensitive: bool = True,
    file_glob: str | None = None,
    engine: str = "auto",
) -> tuple[list[Match], str]:
    """Files below ``root`` whose name (or path, for globs with ``/``) matches ``pattern``, sorted."""
    keep = _name_filter(pattern, root, case_sensitive)
    extra = _Filter(file_glob, root)
    rg = rg_available() if engine in ("auto", "rg") else None
    if rg is not None:
        listing = _run_rg([*_rg_base(rg), "--files", "--null", "--", root]).split(b"\x00")
        paths = [os.fsdecode(p) for p in listing if p]
        used = "rg"
    else:
        paths = list(walk(root))
        used = "python"
    found = sorted(Match(p) for p in paths if keep(p) and extra(p))
    return found[:MAX_COLLECT], used
