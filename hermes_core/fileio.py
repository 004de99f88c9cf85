"""Atomic file writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["atomic_write"]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes | str,
    *,
    mode: int | None = None,
    encoding: str = "utf-8",
    fsync: bool = True,
) -> bool:
    """Replace ``path`` with ``data`` through a temporary file in the same directory and ``os.replace``.

    Creates missing parent directories; keeps an existing file's permission bits (or uses ``mode``). Returns
    True when the file existed before. On any failure the old file is untouched and the temporary file is
    removed. ``fsync=False`` skips flushing to disk (caches that may be lost in a crash).
    """
    target = Path(path)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    existed = False
    try:
        st = os.stat(target)
        existed = True
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{target} is a directory")
        keep = stat.S_IMODE(st.st_mode)
    except FileNotFoundError:
        keep = 0o666 & ~_umask()
    if mode is not None:
        keep = mode
    payload = data.encode(encoding) if isinstance(data, str) else data
    import tempfile  # not at import: it pulls in random and shutil, which start-up does not need

    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, keep)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        _fsync_dir(parent)
    return existed
