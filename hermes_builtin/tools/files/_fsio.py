"""File input shared by the file tools: encoding and binary detection, and reads that open the checked path
itself (never through a symbolic link that appeared after the check: ``hermes_core.fileio.open_nofollow``).
Writes go through ``hermes_core.fileio.atomic_write_nofollow``."""

from __future__ import annotations

import codecs
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import BinaryIO

from hermes_core.fileio import open_nofollow

__all__ = [
    "Detected",
    "NotRegularFile",
    "describe_binary",
    "detect",
    "detect_stream",
    "open_regular",
    "read_bytes",
    "read_text",
    "read_text_from",
]


class NotRegularFile(OSError):
    """The path is a device, a pipe or a socket, not a regular file."""


SNIFF_BYTES = 64 * 1024
FULL_CHECK_BYTES = 16 * 1024 * 1024

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (or docx/xlsx/jar/wheel)"),
    (b"\x1f\x8b", "gzip archive"),
    (b"BZh", "bzip2 archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "7z archive"),
    (b"\x7fELF", "ELF executable"),
    (b"MZ", "Windows executable"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\x00asm", "WebAssembly module"),
    (b"RIFF", "RIFF media (wav/avi/webp)"),
    (b"OggS", "Ogg media"),
    (b"ID3", "MP3 audio"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O binary"),
)


@dataclass(frozen=True, slots=True)
class Detected:
    """How a file should be decoded: ``encoding`` is None for binary files."""

    encoding: str | None
    note: str = ""
    kind: str = ""


def describe_binary(head: bytes, path: PurePath) -> str:
    """A short type name for binary content, from magic numbers, then the file extension."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    if head[4:8] == b"ftyp":
        return "MP4/QuickTime media"
    import mimetypes

    guess, _ = mimetypes.guess_type(path.name)
    return guess or "binary data"


def _looks_textual(sample: bytes) -> bool:
    if not sample:
        return True
    controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    return controls / len(sample) < 0.01


def open_regular(path: Path) -> BinaryIO:
    """Open the regular file ``path`` (a guard's resolved path) for reading without following any symbolic
    link; raises ``FileNotFoundError``, ``IsADirectoryError``, ``NotRegularFile`` or ``SymlinkError``."""
    fd = open_nofollow(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block the open
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(0, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def detect(path: Path) -> Detected:
    """Decide the encoding of the file ``path`` (see ``detect_stream``)."""
    with open_regular(path) as fh:
        return detect_stream(fh, os.fstat(fh.fileno()).st_size, path)


def detect_stream(fh: BinaryIO, size: int, path: PurePath) -> Detected:
    """Decide the encoding of an open file of ``size`` bytes: BOMs, then strict UTF-8, then latin-1 for
    text-like bytes. NUL bytes or undecodable, control-heavy content mean binary (``encoding`` None).

    Reads from the current position; the caller seeks back before reading the text.
    """
    head = fh.read(SNIFF_BYTES)
    for bom, enc in _BOMS:
        if head.startswith(bom):
            return Detected(enc, note=f"decoded as {enc} (byte order mark)")
    if b"\x00" in head:
        return Detected(None, kind=describe_binary(head, path))
    decoder = codecs.getincrementaldecoder("utf-8")()
    checked = head
    try:
        decoder.decode(head, final=size <= len(head))
        if size > len(head):
            budget = FULL_CHECK_BYTES - len(head)
            while budget > 0:
                chunk = fh.read(min(1024 * 1024, budget))
                if not chunk:
                    decoder.decode(b"", final=True)
                    break
                if b"\x00" in chunk:
                    return Detected(None, kind=describe_binary(head, path))
                decoder.decode(chunk, final=False)
                budget -= len(chunk)
        return Detected("utf-8")
    except UnicodeDecodeError:
        pass
    if _looks_textual(checked):
        return Detected("latin-1", note="not valid UTF-8; decoded as latin-1, some characters may be wrong")
    return Detected(None, kind=describe_binary(head, path))


def read_text(path: Path) -> tuple[str, Detected]:
    """The whole file decoded (newlines kept as they are); raises ``ValueError`` for binary files."""
    with open_regular(path) as fh:
        return read_text_from(fh, path)


def read_text_from(fh: BinaryIO, path: PurePath) -> tuple[str, Detected]:
    """The whole open file ``fh`` (named ``path``) decoded; raises ``ValueError`` for binary files."""
    found = detect_stream(fh, os.fstat(fh.fileno()).st_size, path)
    if found.encoding is None:
        raise ValueError(f"binary file ({found.kind})")
    fh.seek(0)
    raw = fh.read()
    return codecs.decode(raw, found.encoding, errors="replace"), found


def read_bytes(path: Path) -> bytes:
    """The bytes of the regular file ``path``, opened without following any symbolic link."""
    with open_regular(path) as fh:
        return fh.read()
