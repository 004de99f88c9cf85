"""Disguised spellings for the redactor: the lines of a text where a secret could hide from patterns written
for plain ASCII, with the disguise taken off.

A secret slips past a pattern when it is percent-encoded (``password%3D...``, ``sk%2Dproj%2D...``), when an
invisible character sits inside its name or its value (a zero-width space, a soft hyphen, a BOM), when it is
written in fullwidth letters (U+FF21 for "A"...), or when a key is written in capitals (``SK-PROJ-...``: lossless
for hex keys). ``undisguised(text, raw)`` returns the affected lines rewritten (escapes decoded, invisible
characters dropped, fullwidth folded to ASCII; keys in capitals as a separate lower-cased copy), joined one
newline apart, each with a map back to the offsets of ``text``. The common text has none of these and costs a few
C-speed passes (``b"%" in raw``, ``str.isascii``, one ``bytes.translate``).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = ["Undisguised", "undisguised"]

Span = tuple[int, int]

_ESCAPE = re.compile(rb"%[0-9A-Fa-f]{2}")
# zero-width and other invisible characters, fullwidth letters, digits, "_", "-" and "=" (not the fullwidth
# punctuation that CJK prose uses)
_ASCII_BYTES = bytes(range(128))
_HIDDEN_RANGES = (
    (0x00AD, 0x00AD), (0x180E, 0x180E), (0x200B, 0x200F), (0x2060, 0x2064), (0xFEFF, 0xFEFF),
    (0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A), (0xFF3F, 0xFF3F), (0xFF0D, 0xFF0D), (0xFF1D, 0xFF1D),
)  # fmt: skip
_HIDDEN = frozenset(chr(c) for first, last in _HIDDEN_RANGES for c in range(first, last + 1))
_FEW_OTHERS = 4096  # non-ASCII characters (and "?") looked at one by one, at most
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


def _hidden(text: str, raw: bytes) -> list[Span]:
    """Where ``text`` holds invisible or fullwidth characters (``raw``: its ASCII form, "?" for the others).

    A text with few characters beyond ASCII has them where ``raw`` has a "?" (found with memchr) and the text
    does not. Otherwise the non-ASCII characters are taken alone (the UTF-8 form without its ASCII bytes)
    and each kind found is located with single-character finds: two fast passes, not a scan of every
    character."""
    spans: list[Span] = []
    at = raw.find(b"?")
    for _ in range(_FEW_OTHERS):
        if at < 0:
            return spans
        if text[at] in _HIDDEN:
            spans.append((at, at + 1))
        at = raw.find(b"?", at + 1)
    spans.clear()
    rest = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES)
    found = _HIDDEN.intersection(rest.decode("utf-8", "replace"))
    for char in found:
        at = text.find(char)
        while at >= 0:
            spans.append((at, at + 1))
            at = text.find(char, at + 1)
    return spans


def undisguised(
    text: str, raw: bytes, capitals: re.Pattern[str] | None = None, regions: Sequence[Span] | None = None
) -> list[Undisguised]:
    """The disguised lines of ``text`` undisguised (see the module docstring); ``raw`` is
    ``text.encode("ascii", "replace")``. ``capitals`` finds a key prefix written in capitals (``SK-PROJ-``) in
    a run of capitals; without it, keys in capitals are not looked for. ``regions``: where runs of capitals
    may stand (every run of 20 of ``[A-Za-z0-9_+/=-]`` lies wholly inside one), by default the whole text.
    Empty for the common text."""
    out: list[Undisguised] = []
    hits: list[Span] = []
    if b"%" in raw:  # (the same spans as in the text, found in a byte per character)
        hits.extend(m.span() for m in _ESCAPE.finditer(raw))
    if not text.isascii():
        hits.extend(_hidden(text, raw))
    if hits:
        hits.sort()
        out.append(_rewrite(text, hits, tokens_only=False))
    upper: list[Span] = []
    if capitals is not None and (regions is None or regions):
        # the regions joined one newline apart (no run crosses it), and where each starts there and in the text
        regions = [(0, len(raw))] if regions is None else regions
        view = b"\n".join([raw[a:b] for a, b in regions]).translate(_UPPER_VIEW)
        starts = list(itertools.accumulate((b - a + 1 for a, b in regions[:-1]), initial=0))
        at = view.find(_UPPER_RUN)
        while at >= 0:
            end = view.find(b" ", at)
            end = len(view) if end < 0 else end
            i = bisect.bisect_right(starts, at) - 1
            shift = regions[i][0] - starts[i]
            if capitals.search(text, at + shift, end + shift):  # a key's prefix, in capitals
                upper.append((at + shift, end + shift))
            at = view.find(_UPPER_RUN, end)
    if upper:
        out.append(_rewrite(text, upper, tokens_only=True))
    return out
