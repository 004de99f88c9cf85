"""Pages of a text file for ``read_file``: only what a page needs is read and decoded.

- The encoding is decided from the first 64 KiB (byte order mark, NUL bytes for binary, UTF-8, else latin-1);
  a page that turns out not to be valid UTF-8 has the whole file checked, as before, and is read again.
- The lines before the page are skipped by counting line ends in the raw bytes (``\\n``, ``\\r\\n`` and ``\\r``,
  as universal newlines count them) for byte-oriented encodings; only the page is decoded.
- After the page, the lines left are counted the same way (a C-speed count) when that costs about what the
  page cost already: the rest is at most 256 KiB, or at most four times what was read to reach the page's end
  (and never more than ``COUNT_LIMIT``). Otherwise the footer gives the file's size and says more lines
  follow: the first page of a big file never reads the rest of it.

So the first page of a 100 MB log costs what a page costs, and a page deep into it what skipping to it costs.
"""

from __future__ import annotations

import functools
import io
import os
import re
from pathlib import Path
from typing import Any, BinaryIO

from .files import MAX_LINE_CHARS, MAX_PAGE_CHARS

__all__ = ["COUNT_LIMIT", "read_page"]

COUNT_LIMIT = 32 * 1024 * 1024  # the rest of a file is never counted beyond this size ...
CHEAP_COUNT = 256 * 1024  # ... and counted when it is this small, or not much more than the page read
PAGE_BYTES = 8 * 1024 * 1024  # a page of more bytes (lines of megabytes) is decoded a piece at a time
_CHUNK = 1 << 20
_ENDS = re.compile(rb"\r\n?|\n")
_BYTEWISE = {"utf-8": "utf-8", "utf-8-sig": "utf-8", "latin-1": "latin-1"}  # ends are the ASCII bytes


class PastTheEnd(Exception):
    """``offset`` lies beyond the last line (``total`` lines)."""

    def __init__(self, total: int) -> None:
        super().__init__(total)
        self.total = total


def _ends(chunk: bytes, start: int) -> int:
    """Line ends in ``chunk[start:]`` (``\r\n`` counts once)."""
    newlines = chunk.count(b"\n", start)
    if b"\r" not in chunk:  # one memchr spares two counts on the common file
        return newlines
    return newlines + chunk.count(b"\r", start) - chunk.count(b"\r\n", start)


def advance(raw: BinaryIO, count: int) -> tuple[int, int]:
    """Read past up to ``count`` lines from the current position; returns ``(position, lines)``: the start of the
    next line (or the end of the file) and how many lines there were (a last line without an end counts)."""
    pos = raw.tell()
    if count <= 0:
        return pos, 0
    passed = 0
    after_cr = False  # the previous chunk ended with "\r": a "\n" opening this one belongs to it
    tail = False  # bytes after the last line end (a last line without one)
    while True:
        chunk = raw.read(_CHUNK)
        if not chunk:
            return pos, passed + (1 if tail else 0)
        start = 1 if after_cr and chunk.startswith(b"\n") else 0
        found = _ends(chunk, start)
        if passed + found < count:
            passed += found
            pos += len(chunk)
            after_cr = chunk.endswith(b"\r")
            tail = not chunk.endswith((b"\n", b"\r"))
            continue
        stop = _nth_end(chunk, start, count - passed)
        if chunk[stop - 1 : stop] == b"\r" and stop == len(chunk) and raw.read(1) == b"\n":
            stop += 1  # "\r\n" split between two chunks
        raw.seek(pos + stop)
        return pos + stop, count


def skip_lines(raw: BinaryIO, count: int) -> int:
    """Read past ``count`` lines, leaving ``raw`` at the start of the next one; ``PastTheEnd`` (with the number
    of lines there are) when the file ends first."""
    pos, passed = advance(raw, count)
    if passed < count:
        raise PastTheEnd(passed)
    return pos


def count_lines(raw: BinaryIO) -> int:
    """The lines from the current position to the end of the file (a last line without an end counts)."""
    lines = 0
    after_cr = False
    last = b""
    while chunk := raw.read(_CHUNK):
        start = 1 if after_cr and chunk.startswith(b"\n") else 0
        lines += _ends(chunk, start)
        after_cr = chunk.endswith(b"\r")
        last = chunk[-1:]
    return lines + (1 if last and last not in (b"\n", b"\r") else 0)


def _bounded_lines(fh: Any, chunk: int = 1 << 20) -> Any:
    """Yield ``(line, length)``, holding at most ``chunk`` characters of a very long line in memory."""
    while True:
        line = fh.readline(chunk)
        if not line:
            return
        length = len(line.rstrip("\n"))
        if not line.endswith("\n"):
            while True:
                more = fh.readline(chunk)
                length += len(more.rstrip("\n"))
                if not more or more.endswith("\n"):
                    break
        yield line, length


def _human(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


def read_page(source: BinaryIO | bytes, target: Path, shown: str, offset: int, limit: int) -> str:
    """Lines ``offset`` to ``offset + limit - 1`` of the open file ``source`` (or of the whole content of a file,
    read already), numbered, with a footer.

    Raises ``PastTheEnd`` when ``offset`` lies beyond the last line, ``OSError`` when reading fails."""
    from ._fsio import SNIFF_BYTES, Detected, detect_stream

    if isinstance(source, bytes):
        whole: bytes | None = source
        raw: BinaryIO = io.BytesIO(source)
        size = len(source)
    else:
        whole, raw = None, source
        size = os.fstat(raw.fileno()).st_size
    if size == 0:
        return f"({shown} is empty)"
    head = whole[:SNIFF_BYTES] if whole is not None else b""
    if head and head.isascii() and b"\x00" not in head:  # what detect_stream decides, without its pass
        found = Detected("utf-8")
    else:
        found = detect_stream(raw, size, target, check_bytes=SNIFF_BYTES)
    if found.encoding is None:
        return f"{shown} is a binary file ({found.kind}, {_human(size)}); it cannot be shown as text."
    text = _page(raw, found.encoding, size, shown, offset, limit, whole)
    if found.encoding == "utf-8" and "\ufffd" in text[0] and size > SNIFF_BYTES:
        raw.seek(0)  # not UTF-8 after all, further on: decide on the whole file, as patch does
        found = detect_stream(raw, size, target)
        if found.encoding is None:
            return f"{shown} is a binary file ({found.kind}, {_human(size)}); it cannot be shown as text."
        text = _page(raw, found.encoding, size, shown, offset, limit)
    page, footer = text
    notes = [footer]
    if found.note:
        notes.append(f"[{found.note}]")
    return "\n".join([page, *notes]) if page else "\n".join(notes)


def _entry(number: int, text: str) -> str:
    if len(text) > MAX_LINE_CHARS:
        text = text[:MAX_LINE_CHARS] + f" ...[line truncated, {len(text)} characters]"
    return f"{number:6d}|{text}"


def _fit(entries: list[str]) -> list[str]:
    """The entries that fit in ``MAX_PAGE_CHARS`` (at least one)."""
    chars = 0
    for i, entry in enumerate(entries):
        chars += len(entry) + 1
        if chars > MAX_PAGE_CHARS and i:
            return entries[:i]
    return entries


def _page(
    raw: BinaryIO, encoding: str, size: int, shown: str, offset: int, limit: int, whole: bytes | None = None
) -> tuple[str, str]:
    """The numbered page and its footer (``whole``: the file's content, when it was read already)."""
    bytewise = _BYTEWISE.get(encoding)
    if bytewise is None:
        return _decoded_page(raw, encoding, size, shown, offset, limit)
    raw.seek(3 if encoding == "utf-8-sig" else 0)
    start = skip_lines(raw, offset - 1)  # PastTheEnd propagates
    quick = _ascii_lines(whole, start, limit) if whole is not None else None
    if quick is not None:
        lines, found, end = quick
    else:
        data, found, end = _page_bytes(raw, limit)
        if data is None:  # lines of megabytes: read them a piece at a time
            raw.seek(start)
            return _decoded_page(raw, bytewise, size, shown, offset, limit, skipped=True)
        text = data.decode(bytewise, "replace")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
    if not found:
        raise PastTheEnd(offset - 1)
    shown_lines = len(lines)
    page = _numbered(lines, offset) if max(map(len, lines), default=0) <= MAX_LINE_CHARS else None
    if page is None or len(page) >= MAX_PAGE_CHARS:  # long lines, or more than a page holds: line by line
        entries = _fit([_entry(n, t) for n, t in enumerate(lines, offset)])
        page, shown_lines = "\n".join(entries), len(entries)
    last = offset + shown_lines - 1
    more = shown_lines < found or end < size
    total: int | None = None if more else last
    rest = size - end
    if more and rest <= COUNT_LIMIT and (rest <= CHEAP_COUNT or rest <= 4 * end):
        raw.seek(end)  # counting costs about what was read already: the total is worth it
        total = offset - 1 + found + count_lines(raw)
    return page, _footer(shown, size, offset, last, total)


def _ascii_lines(whole: bytes, start: int, limit: int) -> tuple[list[str], int, int] | None:
    """The next ``limit`` lines from byte ``start`` of content read already, how many there are and the byte
    after them, with one decode and one split of a window that holds them (64 KiB, then four times more) when
    that window is ASCII text with only ``\\n`` line ends (characters are bytes there). None otherwise: the
    chunked path decides."""
    step = 1 << 16
    while True:
        window = whole[start : start + step]
        if not window.isascii() or b"\r" in window:
            return None
        parts = window.decode("ascii").split("\n", limit)
        if len(parts) > limit:  # ``limit`` ended lines: the last part is the rest of the window
            rest = parts.pop()
            return parts, limit, start + len(window) - len(rest)
        if start + len(window) >= len(whole):  # the file ends within the page
            if parts[-1] == "":  # ... with a line end (or it is empty from ``start``)
                parts.pop()
            return parts, len(parts), len(whole)
        step *= 4


_BLOCK = 2048  # line numbers per block of ready-made number columns


@functools.lru_cache(maxsize=4)
def _columns(block: int) -> list[str]:
    """The number columns (``"\\n     7|"``) of the line numbers ``block * _BLOCK`` onwards, made once."""
    start = block * _BLOCK
    return [f"\n{n:6d}|" for n in range(start, start + _BLOCK)]


def _numbered(lines: list[str], offset: int) -> str:
    """``lines`` numbered from ``offset``, one per line (``_entry`` without truncation), in one join: the
    number columns come ready-made, so no line is formatted on its own."""
    if not lines:
        return ""
    columns: list[str] = []
    end = offset + len(lines)
    for block in range(offset // _BLOCK, (end - 1) // _BLOCK + 1):
        columns += _columns(block)
    first = offset // _BLOCK * _BLOCK
    parts: list[str] = [""] * (2 * len(lines))
    parts[::2] = columns[offset - first : end - first]
    parts[1::2] = lines
    parts[0] = parts[0][1:]  # no line end before the first line
    return "".join(parts)


def _page_bytes(raw: BinaryIO, limit: int) -> tuple[bytes | None, int, int]:
    """The bytes of the next ``limit`` lines (fewer at the end of the file), how many lines they hold, and the
    position after them; ``None`` for the bytes when they pass ``PAGE_BYTES``. Reads 64 KiB, then more."""
    pos = raw.tell()
    parts: list[bytes] = []
    found = 0
    step = 1 << 16
    after_cr = False
    while True:
        chunk = raw.read(step)
        if not chunk:
            data = b"".join(parts)
            tail = bool(data) and not data.endswith((b"\n", b"\r"))
            return data, found + (1 if tail else 0), pos + len(data)
        begin = 1 if after_cr and chunk.startswith(b"\n") else 0
        count = _ends(chunk, begin)
        if found + count < limit:
            found += count
            parts.append(chunk)
            after_cr = chunk.endswith(b"\r")
            if sum(map(len, parts)) > PAGE_BYTES:
                return None, found, -1
            step = min(step * 2, _CHUNK)
            continue
        stop = _nth_end(chunk, begin, limit - found)
        if chunk[stop - 1 : stop] == b"\r" and stop == len(chunk) and raw.read(1) == b"\n":
            chunk += b"\n"  # "\r\n" split between two reads
            stop += 1
        parts.append(chunk[:stop])
        data = b"".join(parts)
        return data, limit, pos + len(data)


def _nth_end(chunk: bytes, begin: int, n: int) -> int:
    """The position just after the ``n``-th line end of ``chunk[begin:]`` (it has at least ``n``)."""
    if b"\r" not in chunk:  # the common file: one C-speed split, no Python step per line
        rest = chunk[begin:].split(b"\n", n)
        return len(chunk) - len(rest[-1])
    for m in _ENDS.finditer(chunk, begin):
        n -= 1
        if n == 0:
            return m.end()
    raise AssertionError("unreachable: the chunk holds the line ends counted")


def _footer(shown: str, size: int, offset: int, last: int, total: int | None) -> str:
    footer = f"[{shown}: lines {offset}-{last}"
    footer += f" of {total}" if total is not None else f"; file is {_human(size)}, more lines follow"
    if total is None or last < total:
        footer += f"; next page: offset={last + 1}"
    return footer + "]"


def _decoded_page(
    raw: BinaryIO, encoding: str, size: int, shown: str, offset: int, limit: int, skipped: bool = False
) -> tuple[str, str]:
    """The page decoded line by line from the start (UTF-16/32), or from the page's start (``skipped``),
    holding at most a megabyte of a very long line."""
    if not skipped:
        raw.seek(0)
    fh = io.TextIOWrapper(raw, encoding=encoding, errors="replace", newline=None)
    try:
        page: list[str] = []
        chars = 0
        number = offset - 1 if skipped else 0
        ended = True  # the file ended before the page was full
        for line, length in _bounded_lines(fh):
            number += 1
            if number < offset:
                continue
            text = line.rstrip("\n")
            if length > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + f" ...[line truncated, {length} characters]"
            entry = f"{number:6d}|{text}"
            if (chars + len(entry) > MAX_PAGE_CHARS and page) or len(page) == limit:
                number -= 1
                ended = False
                break
            page.append(entry)
            chars += len(entry) + 1
        if not page:
            raise PastTheEnd(number)
        last = offset + len(page) - 1
        total: int | None = last if ended else None
        if not ended and size <= COUNT_LIMIT:  # the line after the page is read already: 1 + the rest
            total = last + 1 + sum(1 for _ in _bounded_lines(fh))
    finally:
        fh.detach()
    return "\n".join(page), _footer(shown, size, offset, last, total)
