"""A small .gitignore matcher: patterns, negation, directory-only rules, anchoring and ``**``.

Also used for the file-name globs of ``search_files``, which follow the same syntax (a glob without a
slash matches the name at any depth; with a slash it matches the path from the search root).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

__all__ = ["IgnoreStack", "Rule", "glob_regex", "parse_gitignore"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern line of an ignore file."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _class(pat: str, i: int) -> tuple[str, int]:
    """Translate a ``[...]`` class starting at ``pat[i] == "["``; returns (regex, next index)."""
    j = i + 1
    if j < len(pat) and pat[j] in "!^":
        j += 1
    if j < len(pat) and pat[j] == "]":
        j += 1
    while j < len(pat) and pat[j] != "]":
        j += 1
    if j >= len(pat):
        return re.escape("["), i + 1
    body = pat[i + 1 : j]
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    body = body.replace("\\", "\\\\").replace("^", "\\^")
    return ("[^/" if negate else "[") + body + "]", j + 1


def _translate(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if c == "*":
            if pat.startswith("**", i):
                before_ok = i == 0 or pat[i - 1] == "/"
                after = i + 2
                if before_ok and after < n and pat[after] == "/":
                    out.append("(?:.*/)?")
                    i = after + 1
                    continue
                if before_ok and after == n:
                    out.append(".*")
                    i = after
                    continue
                out.append("[^/]*")
                i = after
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            piece, i = _class(pat, i)
            out.append(piece)
            continue
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pat[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def glob_regex(pattern: str, *, ignore_case: bool = False) -> tuple[re.Pattern[str], bool]:
    """Compile a gitignore-style glob; returns (regex over a relative path, directory-only)."""
    dir_only = pattern.endswith("/")
    pat = pattern.rstrip("/") if dir_only else pattern
    anchored = "/" in pat
    pat = pat.lstrip("/") if pat.startswith("/") else pat
    prefix = "" if anchored else "(?:.*/)?"
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile(f"^{prefix}{_translate(pat)}$", flags | re.DOTALL), dir_only


def _strip_trailing_spaces(line: str) -> str:
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    return line


def parse_gitignore(text: str) -> list[Rule]:
    """The rules of one .gitignore file, in order."""
    rules: list[Rule] = []
    for raw in text.splitlines():
        line = _strip_trailing_spaces(raw.rstrip("\r"))
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith(("\\!", "\\#")):
            line = line[1:]
        if not line or line == "/":
            continue
        regex, dir_only = glob_regex(line)
        rules.append(Rule(regex, negate, dir_only))
    return rules


class IgnoreStack:
    """The ignore rules in force for one directory: ``.gitignore`` files from the outermost inwards."""

    __slots__ = ("_layers",)

    def __init__(self, layers: tuple[tuple[str, tuple[Rule, ...]], ...] = ()) -> None:
        self._layers = layers

    @classmethod
    def for_root(cls, root: str) -> IgnoreStack:
        """The rules of every ancestor of ``root`` (the way ripgrep reads parent ignore files)."""
        ancestors = []
        current = os.path.dirname(root)
        while True:
            ancestors.append(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        stack = cls()
        for directory in reversed(ancestors):
            stack = stack.enter(directory)
        return stack

    def enter(self, directory: str) -> IgnoreStack:
        """The stack for ``directory``, adding its own ``.gitignore`` when it has one."""
        try:
            with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as fh:
                rules = tuple(parse_gitignore(fh.read()))
        except OSError:
            return self
        if not rules:
            return self
        return IgnoreStack((*self._layers, (directory, rules)))

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether the absolute ``path`` is ignored (the last matching rule wins, deeper files last)."""
        result = False
        for base, rules in self._layers:
            prefix = base.rstrip("/") + "/"
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix) :]
            for rule in rules:
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.match(rel):
                    result = not rule.negate
        return result
