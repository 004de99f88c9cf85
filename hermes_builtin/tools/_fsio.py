"""File input/output shared by the file tools: encoding and binary detection, atomic writes."""

from __future__ import annotations

import codecs
import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Detected", "atomic_write", "describe_binary", "detect", "read_text"]

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


def describe_binary(head: bytes, path: Path) -> str:
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


def detect(path: Path) -> Detected:
    """Decide the encoding of ``path``: BOMs, then strict UTF-8, then latin-1 for text-like bytes.

    NUL bytes or undecodable, control-heavy content mean binary (``encoding`` None).
    """
    size = path.stat().st_size
    with open(path, "rb") as fh:
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
    found = detect(path)
    if found.encoding is None:
        raise ValueError(f"binary file ({found.kind})")
    with open(path, encoding=found.encoding, errors="replace", newline="") as fh:
        return fh.read(), found


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, data: bytes, *, mode: int | None = None) -> bool:
    """Write ``data`` to ``path`` through a temporary file in the same directory and ``os.replace``.

    Creates missing parent directories; keeps an existing file's permission bits (or uses ``mode``).
    Returns True when the file existed before. On failure the old file is untouched and the temporary
    file is removed.
    """
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    existed = False
    try:
        st = os.stat(path)
        existed = True
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{path} is a directory")
        keep = stat.S_IMODE(st.st_mode)
    except FileNotFoundError:
        keep = 0o666 & ~_umask()
    if mode is not None:
        keep = mode
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, keep)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(parent)
    return existed
