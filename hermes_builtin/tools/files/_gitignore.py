"""A small .gitignore matcher: patterns, negation, directory-only rules, anchoring and ``**``.

Also used for the file-name globs of ``search_files``, which follow the same syntax (a glob without a
slash matches the name at any depth; with a slash it matches the path from the search root).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

__all__ = ["GlobError", "IgnoreStack", "Rule", "glob_regex", "parse_gitignore"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern line of an ignore file."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


MAX_GLOB_CHARS = 1024
MAX_GLOB_WILDCARDS = 64

# Wildcards are rendered so that matching stays polynomial (at worst about path length squared) whatever the
# glob: "*" never crosses "/", and every wildcard except the last of a component (or of the path) is matched
# lazily inside an atomic group, so the engine commits to the leftmost fit and never retries it. Leftmost is
# always right there: what follows is again a wildcard that can absorb whatever a later fit would have left.
_STAR = "[^/]*"
_WILDCARDS = re.compile(r"\*+|\?")
_DIRS = "(?:[^/]*/)*"


class GlobError(ValueError):
    """A glob too long or with too many wildcards to match safely; the message is for the model."""


def _class(pat: str, i: int) -> tuple[str, int]:
    """Translate a ``[...]`` class starting at ``pat[i] == "["``; returns (regex, next index).

    A class never matches "/" (like ``*`` and ``?``, as git's wildmatch does for paths)."""
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
    body = body.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
    return ("[^/" if negate else "(?!/)[") + body + "]", j + 1


def _components(pat: str) -> list[list[str]]:
    """Split a glob into components at unescaped "/" (outside classes); each is a list of regex atoms, where
    "*" stands for a run of stars and "**" for a component that is exactly two stars."""
    comps: list[list[str]] = [[]]
    raw: list[str] = [""]
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        atom: str
        if c == "/":
            comps.append([])
            raw.append("")
            i += 1
            continue
        if c == "*":
            j = i
            while j < n and pat[j] == "*":
                j += 1
            raw[-1] += pat[i:j]
            if not comps[-1] or comps[-1][-1] != "*":
                comps[-1].append("*")
            i = j
            continue
        if c == "?":
            atom, i = "[^/]", i + 1
        elif c == "[":
            atom, i = _class(pat, i)
        elif c == "\\" and i + 1 < n:
            atom, i = re.escape(pat[i + 1]), i + 2
        else:
            atom, i = re.escape(c), i + 1
        raw[-1] += "x"
        comps[-1].append(atom)
    return [["**"] if text == "**" else comp for comp, text in zip(comps, raw, strict=True)]


def _component_regex(atoms: list[str]) -> str:
    segments: list[list[str]] = [[]]
    for atom in atoms:
        if atom == "*":
            segments.append([])
        else:
            segments[-1].append(atom)
    if len(segments) == 1:
        return "".join(segments[0])
    middle = "".join(f"(?>{_STAR}?{''.join(seg)})" for seg in segments[1:-1])
    return "".join(segments[0]) + middle + _STAR + "".join(segments[-1])


_ANY_REST = object()  # a final "**" component: anything below


def _translate(pat: str) -> str:
    """The regex body for a glob whose leading "/" is already gone; see the note on ``_STAR``."""
    comps = _components(pat)
    # component regexes (ending with "/" unless last), None for a "**/" component, _ANY_REST for a final "**"
    pieces: list[object] = []
    for k, comp in enumerate(comps):
        last = k == len(comps) - 1
        if comp == ["**"]:
            if last:
                pieces.append(_ANY_REST)
            elif not pieces or pieces[-1] is not None:
                pieces.append(None)
            continue
        pieces.append(_component_regex(comp) + ("" if last else "/"))
    out: list[str] = []
    i = 0
    while i < len(pieces) and isinstance(pieces[i], str):
        out.append(str(pieces[i]))
        i += 1
    while i < len(pieces):
        if pieces[i] is _ANY_REST:
            out.append(".*")
            break
        i += 1  # a "**/" marker: the run after it is placed at the leftmost directory where it fits
        run = []
        while i < len(pieces) and isinstance(pieces[i], str):
            run.append(str(pieces[i]))
            i += 1
        if i == len(pieces):
            out.append(_DIRS + "".join(run))
        elif run:
            out.append(f"(?>{_DIRS}?{''.join(run)})")
    return "".join(out)


def glob_regex(pattern: str, *, ignore_case: bool = False) -> tuple[re.Pattern[str], bool]:
    """Compile a gitignore-style glob; returns (regex over a relative path, directory-only).

    Raises ``GlobError`` for a glob over ``MAX_GLOB_CHARS`` characters or ``MAX_GLOB_WILDCARDS`` wildcards."""
    if len(pattern) > MAX_GLOB_CHARS:
        raise GlobError(f"the glob is longer than {MAX_GLOB_CHARS} characters")
    if len(_WILDCARDS.findall(pattern)) > MAX_GLOB_WILDCARDS:
        raise GlobError(f"the glob has more than {MAX_GLOB_WILDCARDS} wildcards (runs of * and ?)")
    dir_only = pattern.endswith("/")
    pat = pattern.rstrip("/") if dir_only else pattern
    anchored = "/" in pat
    pat = pat.lstrip("/") if pat.startswith("/") else pat
    if not anchored:
        pat = "**/" + pat
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile(f"{_translate(pat)}\\Z", flags | re.DOTALL), dir_only


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
        try:
            regex, dir_only = glob_regex(line)
        except GlobError:
            continue  # a rule too big to match safely is dropped (ripgrep would still honour it)
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
