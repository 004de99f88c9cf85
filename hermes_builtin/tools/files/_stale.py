"""The stale-write guard: a file that changed on disk since this session last read or wrote it is not
overwritten or patched unless the call says ``force``.

Each session remembers, per path, the version it last saw (size, modification and change times, inode, and a
digest of the content for files up to 1 MiB) in ``context.session.stash``. Another agent, an editor or a
formatter that changed the file in between makes the next ``write_file``/``patch`` of this session fail with a
message that says so, instead of silently undoing that change. A file this session never read is not guarded.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from hermes_core import CallContext, ToolError

__all__ = ["check_fresh", "remember", "remember_fd"]

_KEY = "files.seen"
DIGEST_LIMIT = 1 << 20


@dataclass(frozen=True, slots=True)
class Version:
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    digest: bytes | None

    def same_file_state(self, other: Version) -> bool:
        if self.digest is not None and other.digest is not None:
            return (
                self.digest == other.digest
            )  # same content: a touch or an identical rewrite changes nothing
        return (self.size, self.mtime_ns, self.ctime_ns, self.inode) == (
            other.size,
            other.mtime_ns,
            other.ctime_ns,
            other.inode,
        )


class _Seen:
    """Path -> the version this session last saw (read or written)."""

    def __init__(self) -> None:
        self.versions: dict[str, Version] = {}
        self.lock = threading.Lock()


def _seen(context: CallContext) -> _Seen | None:
    try:
        return context.session.stash(_KEY, _Seen)
    except RuntimeError:  # the session (or the system) is closing: nothing to remember
        return None


def _digest(data: bytes) -> bytes:
    """A checksum of the content (CRC-32: several times faster than a cryptographic hash, and enough to tell an
    edit from a touch or an identical rewrite; every ``read_file`` of a file up to 1 MiB pays it)."""
    import zlib

    return zlib.crc32(data).to_bytes(4, "big")


def _version(st: os.stat_result, content: bytes | None) -> Version:
    digest = _digest(content) if content is not None else None
    return Version(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, digest)


def _read_small(fd: int, size: int) -> bytes | None:
    if size > DIGEST_LIMIT:
        return None
    try:
        return os.pread(fd, size + 1, 0)
    except OSError:
        return None


def remember_fd(context: CallContext, path: Path, fd: int) -> bytes | None:
    """Record the version of the open file ``fd`` (the one being read) as what this session saw of ``path``.

    Returns the whole content when it was read for the digest and is exactly the ``st_size`` bytes the file had
    (so the caller can show the very bytes that were recorded instead of reading the file again), else None."""
    seen = _seen(context)
    if seen is None:
        return None
    st = os.fstat(fd)
    content = _read_small(fd, st.st_size)
    version = _version(st, content)
    with seen.lock:
        seen.versions[str(path)] = version
    return content if content is not None and len(content) == st.st_size else None


def remember(context: CallContext, path: Path, content: bytes | None) -> None:
    """Record ``path`` as just written with ``content`` by this session (None: too big to keep a digest of)."""
    seen = _seen(context)
    if seen is None:
        return
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return
    version = _version(st, content if content is not None and len(content) <= DIGEST_LIMIT else None)
    with seen.lock:
        seen.versions[str(path)] = version


def forget(context: CallContext, path: Path) -> None:
    """``path`` was deleted by this session."""
    seen = _seen(context)
    if seen is not None:
        with seen.lock:
            seen.versions.pop(str(path), None)


def _current(path: Path) -> Version | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:  # a link, a folder, no permission: the write itself will say what is wrong
        return None
    try:
        st = os.fstat(fd)
        return _version(st, _read_small(fd, st.st_size))
    finally:
        os.close(fd)


def _ago(ns: int) -> str:
    seconds = max(0.0, time.time() - ns / 1e9)
    return f"{seconds:.0f} s ago" if seconds < 120 else f"{seconds / 60:.0f} min ago"


def check_fresh(context: CallContext, path: Path, shown: str, force: bool, verb: str) -> None:
    """Refuse (``ToolError``) to ``verb`` a file that changed since this session last read or wrote it."""
    if force:
        return
    seen = _seen(context)
    if seen is None:
        return
    with seen.lock:
        prior = seen.versions.get(str(path))
    if prior is None:
        return
    now = _current(path)
    if now is None:
        if not os.path.lexists(path):
            raise ToolError(
                f"{shown} was deleted since this session last read it; nothing was {verb}. Check why (another "
                "agent or a tool may have removed it), or pass force=true to write it anyway.",
                retryable=False,
            )
        return
    if now.same_file_state(prior):
        return
    change = f"modified {_ago(now.mtime_ns)}, {now.size} bytes (was {prior.size})"
    raise ToolError(
        f"{shown} changed on disk since this session last read it ({change}); nothing was {verb}. Read it "
        "again and redo the edit on the new content, or pass force=true to overwrite the other change.",
        retryable=False,
    )
