"""Bounded output capture: the first and last bytes of a stream are kept, the middle is only counted."""

from __future__ import annotations

import re
from typing import IO

__all__ = ["HeadTail", "drain", "strip_ansi"]

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape sequences (colours, cursor moves, titles)."""
    return _ANSI.sub("", text)


class HeadTail:
    """Keeps the first ``head`` and the last ``tail`` bytes written, counting what falls in between."""

    def __init__(self, head: int, tail: int) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    @classmethod
    def of(cls, size: int) -> HeadTail:
        """A buffer of ``size`` bytes, two fifths for the head and the rest for the tail."""
        return cls(size * 2 // 5, size - size * 2 // 5)

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self._tail_limit > 0:
            self.tail += data
            if len(self.tail) > 2 * self._tail_limit:
                del self.tail[: len(self.tail) - self._tail_limit]

    @property
    def omitted(self) -> int:
        return max(0, self.total - len(self.head) - min(len(self.tail), self._tail_limit))

    def text(self) -> str:
        tail = bytes(self.tail[-self._tail_limit :]) if self._tail_limit > 0 else b""
        head = bytes(self.head).decode("utf-8", "replace")
        if not self.omitted:
            return strip_ansi(head + tail.decode("utf-8", "replace"))
        tail_text = tail.decode("utf-8", "replace")
        marker = f"\n[... {self.omitted} bytes of output omitted ...]\n"
        return strip_ansi(head + marker + tail_text)


def drain(stream: IO[bytes], sink: HeadTail) -> None:
    """Read ``stream`` to its end into ``sink`` (for a reader thread)."""
    read = getattr(stream, "read1", stream.read)
    try:
        while True:
            chunk = read(65536)
            if not chunk:
                return
            sink.write(chunk)
    except (OSError, ValueError):
        return
