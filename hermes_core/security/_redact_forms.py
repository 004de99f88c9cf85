"""Disguised spellings for the redactor: the lines of a text where a secret could hide from patterns written
for plain ASCII, with the disguise taken off.

A secret slips past a pattern when it is percent-encoded (``password%3D...``, ``sk%2Dproj%2D...``), when an
invisible character sits inside its name or its value (a zero-width space, a soft hyphen, a BOM), when it is
written in fullwidth letters (U+FF21 for "A"...), or when a key is written in capitals (``SK-PROJ-...``: lossless
for hex keys). ``undisguised(text, raw)`` returns the affected lines rewritten (escapes decoded, invisible
characters dropped, fullwidth folded to ASCII; keys in capitals as a separate lower-cased copy), joined one
newline apart, each with a map back to the offsets of ``text``. The common text has none of these and costs a few
C-speed passes (``"%" in text``, ``str.isascii``, one ``bytes.translate``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Undisguised", "undisguised"]

Span = tuple[int, int]

_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
# zero-width and other invisible characters, fullwidth letters, digits, "_", "-" and "=" (not the fullwidth
# punctuation that CJK prose uses)
_ASCII_BYTES = bytes(range(128))
_UNICODE = re.compile(
    r"[\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\uff3f\uff0d\uff1d]"
)
# upper-case key runs: 20 or more of [A-Z0-9_+/=-] (lower-case letters and everything else break a run)
_UPPER_VIEW = bytes(
    ord("a") if chr(b) in "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+/=-" else ord(" ") for b in range(256)
)
_UPPER_RUN = b"a" * 20
_LINES_AROUND = 256  # a rewritten region takes in the lines this far around a disguise
_LINE_REACH = 512  # ... reaching for their ends at most this much further
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@dataclass(slots=True)
class Undisguised:
    """Rewritten lines of a text (``text``) and how to map a span of it back (``span``).

    ``tokens_only``: a lower-cased copy, in which only the provider-key rules may run (an assignment's verdict
    depends on the case of its value).
    """

    text: str
    tokens_only: bool
    _new: list[int]  # where each segment starts in ``text``
    _old: list[int]  # where it starts in the original
    _old_len: list[int]  # its length in the original ("%3D": 3, U+200B: 1, a copied stretch: its own)
    _copied: list[bool]  # copied as it was (offsets inside it map one to one)
    _joints: list[int]  # where the newline between two regions stands in ``text``

    def span(self, start: int, end: int) -> Span | None:
        """The original span of ``text[start:end]``; None when it crosses a joint between two regions."""
        k = bisect.bisect_left(self._joints, start)
        if k < len(self._joints) and self._joints[k] < end:
            return None
        i = bisect.bisect_right(self._new, start) - 1
        j = bisect.bisect_right(self._new, end - 1) - 1
        first = self._old[i] + (start - self._new[i] if self._copied[i] else 0)
        last = self._old[j] + (end - self._new[j] if self._copied[j] else self._old_len[j])
        return first, last


def _regions(text: str, hits: list[Span]) -> Iterator[Span]:
    """The lines around each hit, from ``_LINES_AROUND`` characters before it to as far after (the name of a YAML
    block, the lines of a netrc entry), extended to whole lines at most ``_LINE_REACH`` further; merged where
    they meet."""
    start = end = -1
    size = len(text)
    for a, b in hits:
        back = max(0, a - _LINES_AROUND)
        line_start = max(text.rfind("\n", max(0, back - _LINE_REACH), back) + 1, back - _LINE_REACH, 0)
        reach = min(size, b + _LINES_AROUND)
        line_end = text.find("\n", reach, reach + _LINE_REACH)
        line_end = min(size, reach + _LINE_REACH) if line_end < 0 else line_end
        if start >= 0 and line_start <= end + 1:
            end = max(end, line_end)
            continue
        if start >= 0:
            yield start, end
        start, end = line_start, line_end
    if start >= 0:
        yield start, end


def _replacement(piece: str) -> str:
    if piece[0] == "%":
        code = int(piece[1:], 16)
        return chr(code) if 0x20 <= code < 0x7F else piece  # printable ASCII only: a map stays 1:1 otherwise
    if "\uff01" <= piece <= "\uff5e":
        return chr(ord(piece) - 0xFEE0)
    return ""  # an invisible character


def _rewrite(text: str, hits: list[Span], tokens_only: bool) -> Undisguised:
    new: list[int] = []
    old: list[int] = []
    old_len: list[int] = []
    copied: list[bool] = []
    joints: list[int] = []
    parts: list[str] = []
    size = 0
    at = 0  # index into hits

    def emit(piece: str, origin: int, length: int, copy: bool) -> None:
        nonlocal size
        new.append(size)
        old.append(origin)
        old_len.append(length)
        copied.append(copy)
        parts.append(piece)
        size += len(piece)

    for start, end in _regions(text, hits):
        if parts:
            joints.append(size)
            emit("\n", start, 0, False)  # the joint: ``span`` refuses to cross it
        pos = start
        while at < len(hits) and hits[at][0] < end:
            a, b = hits[at]
            at += 1
            if a < pos:
                continue
            if a > pos:
                emit(text[pos:a], pos, a - pos, True)
            piece = text[a:b]
            emit(piece.translate(_ASCII_LOWER) if tokens_only else _replacement(piece), a, b - a, tokens_only)
            pos = b
        if end > pos:
            emit(text[pos:end], pos, end - pos, True)
    joined = "".join(parts)
    if tokens_only:
        joined = joined.translate(_ASCII_LOWER)
    return Undisguised(joined, tokens_only, new, old, old_len, copied, joints)


def _hidden(text: str) -> list[Span]:
    """Where ``text`` holds invisible or fullwidth characters. The character-class scan runs over the non-ASCII
    characters alone (the UTF-8 form without its ASCII bytes); each one found is then located with
    single-character finds, so a long text pays two fast passes, not a scan of every character."""
    rest = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES)
    found = {m.group() for m in _UNICODE.finditer(rest.decode("utf-8", "replace"))}
    spans: list[Span] = []
    for char in found:
        at = text.find(char)
        while at >= 0:
            spans.append((at, at + 1))
            at = text.find(char, at + 1)
    return spans


def undisguised(text: str, raw: bytes, capitals: re.Pattern[str] | None = None) -> list[Undisguised]:
    """The disguised lines of ``text`` undisguised (see the module docstring); ``raw`` is
    ``text.encode("ascii", "replace")``. ``capitals`` finds a key prefix written in capitals (``SK-PROJ-``) in
    a run of capitals; without it, keys in capitals are not looked for. Empty for the common text."""
    out: list[Undisguised] = []
    hits: list[Span] = []
    if "%" in text:
        hits.extend(m.span() for m in _ESCAPE.finditer(text))
    if not text.isascii():
        hits.extend(_hidden(text))
    if hits:
        hits.sort()
        out.append(_rewrite(text, hits, tokens_only=False))
    view = raw.translate(_UPPER_VIEW)
    upper: list[Span] = []
    at = view.find(_UPPER_RUN)
    while at >= 0:
        end = view.find(b" ", at)
        end = len(view) if end < 0 else end
        if capitals is not None and capitals.search(text, at, end):  # a key's prefix, in capitals
            upper.append((at, end))
        at = view.find(_UPPER_RUN, end)
    if upper:
        out.append(_rewrite(text, upper, tokens_only=True))
    return out
