"""The pure-Python search engine's regex half, run as a child process that the parent kills at its deadline.

Python's ``re`` holds the interpreter inside one C call while it backtracks, so a pattern like ``^(a+)+$`` can
run for hours and no timeout in the calling process fires. Here it runs in its own process (``python -I -S``,
standard library only), which the parent kills when the search's time is up; its memory is capped too.

Protocol: a JSON object on stdin (``pattern``, ``ignore_case``, ``paths``, ``max_filesize``,
``max_collect``, ``max_line``); on stdout one line per match, ``M<TAB>path index<TAB>line<TAB>text``,
or a single ``E<TAB>message`` line and exit status 2.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
import sys

_MEMORY_LIMIT = 2 * 1024 * 1024 * 1024


def _lines(data: bytes) -> list[str] | None:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", "replace").split("\n")
    if b"\x00" in data:
        return None
    if data.startswith(codecs.BOM_UTF8):
        data = data[3:]
    return data.decode("utf-8", "replace").split("\n")


def _read(path: str, max_filesize: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            info = os.fstat(fd)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_filesize:
            return None
        try:
            return fh.read(max_filesize + 1)
        except OSError:
            return None


def _clip(text: str, limit: int) -> str:
    text = text.rstrip("\r\n")
    return text[:limit] + " ...[truncated]" if len(text) > limit else text


def main() -> int:
    out = sys.stdout.buffer
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_LIMIT, _MEMORY_LIMIT))
    except (ImportError, ValueError, OSError):
        pass
    job = json.loads(sys.stdin.buffer.read())
    try:
        regex = re.compile(job["pattern"], re.IGNORECASE if job["ignore_case"] else 0)
    except (re.error, OverflowError, RecursionError) as exc:
        out.write(f"E\tinvalid regular expression {job['pattern']!r}: {exc}\n".encode("utf-8", "replace"))
        return 2
    found = 0
    try:
        for index, path in enumerate(job["paths"]):
            data = _read(path, job["max_filesize"])
            lines = _lines(data) if data is not None else None
            if not lines:
                continue
            if lines[-1] == "":
                lines.pop()
            for number, line in enumerate(lines, 1):
                if regex.search(line):
                    text = _clip(line, job["max_line"])
                    out.write(f"M\t{index}\t{number}\t{text}\n".encode("utf-8", "surrogateescape"))
                    found += 1
                    if found >= job["max_collect"]:
                        return 0
    except MemoryError:
        out.write(b"E\tthe search ran out of memory; narrow the path or the pattern\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
