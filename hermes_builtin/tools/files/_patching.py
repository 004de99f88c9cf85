"""Text edits for the ``patch`` tool: tolerant find-and-replace and a small multi-file patch format.

Matching goes from strict to tolerant: exact text, then whole lines compared with whitespace collapsed
(the replacement is re-indented to the matched indentation), then whitespace runs matched loosely.
Every level refuses ambiguous matches.

Patch format::

    *** Begin Patch
    *** Update File: path/to/file.py
    @@ def some_function():        (optional anchor: the search starts at this line)
     context line                   (space = unchanged, - = removed, + = added)
    -old line
    +new line
    *** Add File: path/new.txt
    +every line starts with +
    *** Delete File: path/old.txt
    *** End Patch
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

__all__ = [
    "FileOp",
    "Hunk",
    "PatchError",
    "apply_hunks",
    "parse_patch",
    "replace_text",
    "unified_diff",
]


class PatchError(ValueError):
    """The edit cannot be applied; the message tells the model why and what to do."""


def _norm(line: str) -> str:
    return " ".join(line.split())


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _trim_blank(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def reindent(new_lines: list[str], old_lines: list[str], matched: list[str]) -> list[str]:
    """Re-indent ``new_lines`` the way ``matched`` (file lines) is indented relative to ``old_lines``.

    Indentation seen in the old text maps to the file's; other depths are scaled by the observed
    ratio (2-space text into a 4-space file), or shifted by the difference of the first line.
    """
    mapping: dict[str, str] = {}
    for old, got in zip(old_lines, matched, strict=False):
        if old.strip() and got.strip():
            mapping.setdefault(_indent(old), _indent(got))
    if all(k == v for k, v in mapping.items()):
        return list(new_lines)
    pairs = [(len(k), len(v)) for k, v in mapping.items() if k]
    ratios = {v / k for k, v in pairs}
    unit = "\t" if any("\t" in v for v in mapping.values()) else " "
    base_old, base_new = next(iter(mapping.items()))
    out = []
    for line in new_lines:
        if not line.strip():
            out.append("")
            continue
        lead, body = _indent(line), line.lstrip(" \t")
        if lead in mapping:
            out.append(mapping[lead] + body)
        elif len(ratios) == 1 and all(c == " " for c in lead):
            out.append(unit * round(len(lead) * next(iter(ratios))) + body)
        elif lead.startswith(base_old):
            out.append(base_new + lead[len(base_old) :] + body)
        else:
            shallower = len(base_old) - len(lead)
            out.append(base_new[: max(0, len(base_new) - shallower)] + body)
    return out


def _find_line_matches(file_lines: list[str], old_lines: list[str], start: int = 0) -> list[int]:
    """Start indexes where ``old_lines`` equals a run of file lines, whitespace collapsed."""
    target = [_norm(x) for x in old_lines]
    if not target:
        return []
    normed = [_norm(x) for x in file_lines]
    m = len(target)
    return [
        i for i in range(start, len(normed) - m + 1) if normed[i] == target[0] and normed[i : i + m] == target
    ]


def _find_exact_lines(file_lines: list[str], old_lines: list[str], start: int = 0) -> list[int]:
    m = len(old_lines)
    if not m:
        return []
    first = old_lines[0]
    return [
        i
        for i in range(start, len(file_lines) - m + 1)
        if file_lines[i] == first and file_lines[i : i + m] == old_lines
    ]


def closest_region(file_lines: list[str], old_lines: list[str], start: int = 0) -> str:
    """The file region that looks most like ``old_lines``, numbered, for a "not found" message."""
    old = _trim_blank(old_lines) or old_lines
    if not old or not file_lines:
        return ""
    positions: dict[str, list[int]] = {}
    for j, line in enumerate(old):
        if _norm(line):
            positions.setdefault(_norm(line), []).append(j)
    votes: dict[int, int] = {}
    for i in range(start, len(file_lines)):
        for j in positions.get(_norm(file_lines[i]), ()):
            votes[i - j] = votes.get(i - j, 0) + 1
    if votes:
        candidates = sorted(votes, key=lambda s: (-votes[s], s))[:5]
    else:
        first = _norm(old[0])
        normed = [_norm(x) for x in file_lines[start:]]
        close = difflib.get_close_matches(first, normed, n=1, cutoff=0.5)
        if not close:
            return ""
        candidates = [start + normed.index(close[0])]
    want = "\n".join(_norm(x) for x in old)
    best, best_ratio = candidates[0], -1.0
    for s in candidates:
        lo = max(0, s)
        window = "\n".join(_norm(x) for x in file_lines[lo : lo + len(old)])
        ratio = difflib.SequenceMatcher(None, want, window, autojunk=False).ratio()
        if ratio > best_ratio:
            best, best_ratio = lo, ratio
    lo = max(0, best)
    hi = min(len(file_lines), lo + len(old))
    shown = [f"{n + 1:6d}|{file_lines[n]}" for n in range(lo, hi)][:40]
    return f"The most similar region (lines {lo + 1}-{hi}, {best_ratio:.0%} similar):\n" + "\n".join(shown)


def _split_eol(text: str) -> tuple[str, bool]:
    crlf = text.count("\r\n")
    if crlf and crlf * 2 >= text.count("\n"):
        return text.replace("\r\n", "\n"), True
    return text, False


@dataclass(slots=True)
class Replacement:
    """The result of ``replace_text``."""

    text: str
    count: int
    strategy: str
    first_line: int


def replace_text(text: str, old: str, new: str, replace_all: bool = False) -> Replacement:
    """Replace ``old`` by ``new`` in ``text`` (see the module doc for the matching levels)."""
    if not old:
        raise PatchError("old_string is empty; to create or overwrite a whole file use write_file")
    if old == new:
        raise PatchError("old_string and new_string are identical; nothing to change")
    body, crlf = _split_eol(text)
    old = old.replace("\r\n", "\n")
    new = new.replace("\r\n", "\n")
    result = _replace_lf(body, old, new, replace_all)
    if crlf:
        result.text = result.text.replace("\n", "\r\n")
    return result


def _ambiguous(lines: list[int], what: str) -> PatchError:
    shown = ", ".join(str(n) for n in lines[:20]) + (" ..." if len(lines) > 20 else "")
    return PatchError(
        f"old_string {what} {len(lines)} places (lines {shown}); include more surrounding lines to make it "
        "unique, or set replace_all=true to change every occurrence"
    )


def _replace_lf(text: str, old: str, new: str, replace_all: bool) -> Replacement:
    count = text.count(old)
    if count:
        first = _line_of(text, text.index(old))
        if count > 1 and not replace_all:
            lines, pos = [], text.find(old)
            while pos >= 0:
                lines.append(_line_of(text, pos))
                pos = text.find(old, pos + len(old))
            raise _ambiguous(lines, "matches")
        return Replacement(text.replace(old, new), count, "exact", first)
    file_lines = text.split("\n")
    old_lines = _trim_blank(old.split("\n"))
    if not old_lines:
        raise PatchError("old_string contains only whitespace and was not found")
    starts = _find_line_matches(file_lines, old_lines)
    if starts:
        if len(starts) > 1 and not replace_all:
            raise _ambiguous([s + 1 for s in starts], "matches (ignoring whitespace)")
        new_lines = _trim_blank(new.split("\n")) if new.strip() else []
        chosen, last_end = [], -1
        for s in starts:
            if s >= last_end:
                chosen.append(s)
                last_end = s + len(old_lines)
        for s in reversed(chosen):
            matched = file_lines[s : s + len(old_lines)]
            file_lines[s : s + len(old_lines)] = reindent(new_lines, old_lines, matched)
        return Replacement("\n".join(file_lines), len(chosen), "whitespace-insensitive lines", chosen[0] + 1)
    tokens = old.split()
    pattern = re.compile(r"\s+".join(re.escape(t) for t in tokens))
    found = list(pattern.finditer(text))
    if found:
        if len(found) > 1 and not replace_all:
            raise _ambiguous([_line_of(text, m.start()) for m in found], "matches (ignoring whitespace)")
        first = _line_of(text, found[0].start())
        return Replacement(pattern.sub(lambda _m: new, text), len(found), "whitespace-insensitive", first)
    hint = closest_region(file_lines, old_lines)
    raise PatchError(
        "old_string was not found (also not when ignoring whitespace and indentation). "
        + (hint if hint else "Read the file again and copy the exact text.")
    )


@dataclass(slots=True)
class Hunk:
    """One ``@@`` section of an Update: an optional anchor line and its tagged lines."""

    anchor: str | None
    lines: list[tuple[str, str]] = field(default_factory=list)
    line_no: int = 0


@dataclass(slots=True)
class FileOp:
    """One file of a patch: ``kind`` is "update", "add" or "delete"."""

    kind: str
    path: str
    hunks: list[Hunk] = field(default_factory=list)
    content: list[str] = field(default_factory=list)


_OP = re.compile(r"^\*\*\* (Update|Add|Delete) File:\s*(.+?)\s*$")


def parse_patch(text: str) -> list[FileOp]:
    """Parse the patch format of the module doc; raises ``PatchError`` naming the bad line."""
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and lines[0].startswith("```"):
        lines = lines[1:]
        while lines and not lines[-1].strip():
            lines.pop()
        if lines and lines[-1].startswith("```"):
            lines.pop()
    ops: list[FileOp] = []
    current: FileOp | None = None
    ended = False
    for n, line in enumerate(lines, 1):
        if ended:
            if line.strip():
                raise PatchError(f"patch line {n}: text after '*** End Patch'")
            continue
        if line.strip() == "*** Begin Patch":
            if ops or current:
                raise PatchError(f"patch line {n}: a second '*** Begin Patch'")
            continue
        if line.strip() == "*** End Patch":
            ended = True
            continue
        op = _OP.match(line)
        if op:
            kind = op.group(1).lower()
            current = FileOp(kind, op.group(2))
            ops.append(current)
            continue
        if current is None:
            if line.strip():
                raise PatchError(
                    f"patch line {n}: expected '*** Update File: <path>' (or Add/Delete), got {line!r}"
                )
            continue
        if current.kind == "delete":
            if line.strip():
                raise PatchError(f"patch line {n}: '*** Delete File' takes no content lines")
            continue
        if current.kind == "add":
            if line.startswith("+"):
                current.content.append(line[1:])
            elif line.strip():
                raise PatchError(f"patch line {n}: every line of an added file starts with '+'")
            else:
                current.content.append("")
            continue
        if line.startswith("@@"):
            anchor = line[2:].strip()
            if anchor.endswith("@@"):
                anchor = anchor[:-2].strip()
            current.hunks.append(Hunk(anchor or None, line_no=n))
            continue
        if not current.hunks:
            current.hunks.append(Hunk(None, line_no=n))
        tag = line[:1]
        if tag in (" ", "-", "+"):
            current.hunks[-1].lines.append((tag, line[1:]))
        elif not line:
            current.hunks[-1].lines.append((" ", ""))
        else:
            raise PatchError(
                f"patch line {n}: lines of an update start with ' ' (context), '-' (remove) or '+' (add); "
                f"got {line!r}"
            )
    if not ops:
        raise PatchError(
            "the patch contains no '*** Update File:', '*** Add File:' or '*** Delete File:' section"
        )
    for op_ in ops:
        if op_.kind == "update":
            while op_.hunks and not op_.hunks[-1].lines:
                op_.hunks.pop()
            for hunk in op_.hunks:
                while hunk.lines and hunk.lines[-1] == (" ", ""):
                    hunk.lines.pop()
            if not any(tag != " " for h in op_.hunks for tag, _ in h.lines):
                raise PatchError(f"the update of {op_.path} changes nothing (no '-' or '+' lines)")
        if op_.kind == "add":
            while op_.content and op_.content[-1] == "":
                op_.content.pop()
    return ops


def _find_anchor(file_lines: list[str], anchor: str, start: int) -> int:
    want = _norm(anchor)
    for i in range(start, len(file_lines)):
        if _norm(file_lines[i]) == want:
            return i
    for i in range(start, len(file_lines)):
        if want and want in _norm(file_lines[i]):
            return i
    raise PatchError(f"anchor line '@@ {anchor}' was not found")


def apply_hunks(text: str, hunks: list[Hunk], path: str) -> str:
    """Apply the hunks of one Update to ``text`` in order; raises ``PatchError`` naming the hunk."""
    body, crlf = _split_eol(text)
    file_lines = body.split("\n")
    cursor = 0
    for number, hunk in enumerate(hunks, 1):
        where = f"{path}, hunk {number} (patch line {hunk.line_no})"
        old = [t for tag, t in hunk.lines if tag in " -"]
        new = [t for tag, t in hunk.lines if tag in " +"]
        start = cursor
        if hunk.anchor is not None:
            try:
                start = _find_anchor(file_lines, hunk.anchor, cursor)
            except PatchError as exc:
                raise PatchError(f"{where}: {exc}") from None
        if not old:
            pos = (
                start + 1 if hunk.anchor is not None else len(file_lines) - (1 if file_lines[-1] == "" else 0)
            )
            file_lines[pos:pos] = new
            cursor = pos + len(new)
            continue
        matches = _find_exact_lines(file_lines, old, start)
        fuzzy = False
        if not matches:
            matches = _find_line_matches(file_lines, old, start)
            fuzzy = True
        if not matches:
            hint = closest_region(file_lines, old, start)
            raise PatchError(f"{where}: the context and '-' lines were not found. {hint}".rstrip())
        if len(matches) > 1 and hunk.anchor is None:
            shown = ", ".join(str(m + 1) for m in matches[:20])
            raise PatchError(
                f"{where}: the context and '-' lines match {len(matches)} places (lines {shown}); "
                "add more context lines or an '@@ <line above>' anchor"
            )
        pos = matches[0]
        replacement = new
        if fuzzy:
            replacement = reindent(new, old, file_lines[pos : pos + len(old)])
        file_lines[pos : pos + len(old)] = replacement
        cursor = pos + len(replacement)
    out = "\n".join(file_lines)
    return out.replace("\n", "\r\n") if crlf else out


def unified_diff(
    path: str,
    before: str,
    after: str,
    *,
    created: bool = False,
    deleted: bool = False,
    max_chars: int = 40_000,
) -> str:
    """A unified diff of one file (``a/path`` to ``b/path``), capped at ``max_chars``."""
    old_lines = [x if x.endswith("\n") else x + "\n" for x in before.splitlines(keepends=True)]
    new_lines = [x if x.endswith("\n") else x + "\n" for x in after.splitlines(keepends=True)]
    diff = "".join(
        difflib.unified_diff(
            old_lines,
            new_lines,
            fromfile="/dev/null" if created else f"a/{path}",
            tofile="/dev/null" if deleted else f"b/{path}",
            n=3,
        )
    )
    if len(diff) > max_chars:
        diff = diff[:max_chars] + f"\n[diff truncated: {len(diff) - max_chars} more characters]\n"
    return diff
