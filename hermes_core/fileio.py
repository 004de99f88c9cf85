"""Atomic file writes (a reader sees the old file or the new one, never half of either), and file access that
never follows a symbolic link, so the file a guard checked is the file that is used.

``open_nofollow``, ``open_dir_nofollow``, ``atomic_write_nofollow`` and ``unlink_nofollow`` take an absolute
path with no ``.``/``..`` parts (a guard's resolved path: ``check_path(...).resolved``) and fail with
``OSError(ELOOP)`` (``SymlinkError``) when any part of it is a symbolic link now: a path checked and then
swapped for a link in between cannot redirect a read or a write. On Linux they use ``openat2`` with
``RESOLVE_NO_SYMLINKS`` where the kernel has it, else they walk the path one directory descriptor at a time
with ``O_NOFOLLOW``; writes create their temporary file in the directory descriptor and ``renameat`` it into
place.

``which`` finds a program as ``shutil.which`` does, without importing :mod:`shutil` (which pulls the compression
modules into every start-up whose checks look for a binary).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "RESOLVE_BENEATH",
    "RESOLVE_NO_MAGICLINKS",
    "RESOLVE_NO_SYMLINKS",
    "RESOLVE_NO_XDEV",
    "SymlinkError",
    "atomic_write",
    "atomic_write_at",
    "atomic_write_nofollow",
    "open_dir_nofollow",
    "open_nofollow",
    "openat2",
    "openat2_available",
    "unlink_nofollow",
    "which",
]


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


# -- no symbolic links: the object checked is the object used -------------------------------------------------


class SymlinkError(OSError):
    """A part of the path is a symbolic link now (it changed after it was checked); ``errno`` is ``ELOOP``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        message = "a symbolic link is in the way (the path changed after it was checked)"
        super().__init__(errno.ELOOP, message, os.fspath(path))


RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = _RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = _RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = _RESOLVE_BENEATH = 0x08
_SYS_OPENAT2 = 437  # the same number on every Linux architecture (new system calls share one table)
_openat2_state: dict[str, Any] = {}
_openat2_lock = threading.Lock()
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_TMPFILE = getattr(os, "O_TMPFILE", 0)


def _parts(path: str | os.PathLike[str]) -> list[str]:
    text = os.fspath(path)
    if not text.startswith("/"):
        raise ValueError(f"expected an absolute path, got {text!r}")
    parts = [p for p in text.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise ValueError(f"expected a resolved path without . or .. parts, got {text!r}")
    return parts


def openat2(dir_fd: int, path: str, flags: int, mode: int = 0, resolve: int = 0) -> int:
    """The ``openat2`` system call: open ``path`` relative to ``dir_fd`` with ``RESOLVE_*`` flags ``resolve``
    (``O_CLOEXEC`` added). Raises ``OSError`` (``ENOSYS`` where the kernel or platform has none: check
    ``openat2_available()``)."""
    call = _openat2_raw()
    if call is None:
        raise OSError(errno.ENOSYS, "openat2 is not available here", path)
    return call(dir_fd, path, flags, mode, resolve)


def openat2_available() -> bool:
    """Whether ``openat2`` works here (Linux 5.6+, and no system-call filter forbids it)."""
    return _openat2_call() is not None


def _openat2_raw() -> Callable[[int, str, int, int, int], int] | None:
    with _openat2_lock:
        if "raw" not in _openat2_state:
            raw: Callable[[int, str, int, int, int], int] | None = None
            if os.uname().sysname == "Linux":
                try:
                    raw = _make_openat2()
                except (OSError, AttributeError, ImportError):
                    raw = None
            _openat2_state["raw"] = raw
        return _openat2_state["raw"]  # type: ignore[no-any-return]


def _openat2_call() -> Callable[[str, int, int], int] | None:
    """``openat2`` beneath ``/`` with no symbolic link allowed, or None when this kernel or platform has none."""
    raw = _openat2_raw()
    with _openat2_lock:
        if "call" in _openat2_state:
            return _openat2_state["call"]  # type: ignore[no-any-return]
        call: Callable[[str, int, int], int] | None = None
        if raw is not None:
            root = os.open("/", getattr(os, "O_PATH", os.O_RDONLY) | _DIRECTORY | _CLOEXEC)
            resolve = _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS | _RESOLVE_BENEATH

            def beneath_root(rel: str, flags: int, mode: int) -> int:
                try:
                    return raw(root, rel, flags, mode, resolve)
                except OSError as exc:
                    raise OSError(exc.errno, exc.strerror, "/" + rel) from None

            try:
                os.close(
                    beneath_root("", os.O_RDONLY | _DIRECTORY, 0)
                )  # a filter may forbid it: walk instead
                call = beneath_root
            except OSError:
                os.close(root)
        _openat2_state["call"] = call
        return call


def _make_openat2() -> Callable[[int, str, int, int, int], int]:
    import ctypes

    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long

    class OpenHow(ctypes.Structure):
        _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

    size = ctypes.sizeof(OpenHow)

    def raw(dir_fd: int, rel: str, flags: int, mode: int, resolve: int) -> int:
        how = OpenHow(flags | _CLOEXEC, mode if flags & (os.O_CREAT | _TMPFILE) else 0, resolve)
        name = (rel or ".").encode("utf-8", "surrogateescape")
        fd = int(syscall(_SYS_OPENAT2, dir_fd, name, ctypes.byref(how), size))
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), rel)
        return fd

    return raw


def _walk(parts: list[str], *, create: bool = False, mode: int = 0o777) -> int:
    """A directory descriptor for ``/``+``parts``, opening each part with ``O_NOFOLLOW`` relative to the last
    (``create``: missing directories are made on the way, never through a link)."""
    fd = os.open("/", os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts:
            flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
            try:
                child = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, mode, dir_fd=fd)
                child = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and _is_link(fd, part):
                    raise SymlinkError("/" + "/".join(parts)) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _link_error(exc: OSError, path: str) -> OSError:
    return SymlinkError(path) if exc.errno == errno.ELOOP else exc


def open_dir_nofollow(path: str | os.PathLike[str], *, create: bool = False, mode: int = 0o777) -> int:
    """A read-only descriptor of the directory ``path``; no part of it may be a symbolic link.

    ``create=True`` makes missing directories (with ``mode``), each relative to its parent's descriptor.
    """
    parts = _parts(path)
    call = None if create else _openat2_call()
    if call is not None:
        try:
            return int(call("/".join(parts), os.O_RDONLY | _DIRECTORY, 0))
        except OSError as exc:
            raise _link_error(exc, os.fspath(path)) from None
    return _walk(parts, create=create, mode=mode)


def open_nofollow(path: str | os.PathLike[str], flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
    """``os.open(path, flags, mode)`` where no part of ``path`` may be a symbolic link (``SymlinkError``)."""
    parts = _parts(path)
    if not parts:
        return os.open("/", flags | _CLOEXEC)
    call = _openat2_call()
    if call is not None:
        try:
            return int(call("/".join(parts), flags, mode))
        except OSError as exc:
            raise _link_error(exc, os.fspath(path)) from None
    dir_fd = _walk(parts[:-1])
    try:
        return os.open(parts[-1], flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        raise _link_error(exc, os.fspath(path)) from None
    finally:
        os.close(dir_fd)


def atomic_write_nofollow(
    path: str | os.PathLike[str],
    data: bytes | str,
    *,
    mode: int | None = None,
    encoding: str = "utf-8",
    fsync: bool = True,
    create_parents: bool = True,
) -> bool:
    """``atomic_write`` where no part of ``path`` may be a symbolic link, now or while it writes.

    The temporary file is created in the parent's descriptor and renamed over the name inside it, so the data
    lands in the directory that was checked or nowhere. Returns True when the file existed before.
    """
    parts = _parts(path)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "is a directory", "/")
    dir_fd = open_dir_nofollow("/" + "/".join(parts[:-1]), create=create_parents)
    try:
        return atomic_write_at(
            dir_fd, parts[-1], data, mode=mode, fsync=fsync, shown=os.fspath(path), encoding=encoding
        )
    finally:
        os.close(dir_fd)


def atomic_write_at(
    dir_fd: int,
    name: str,
    data: bytes | str,
    *,
    mode: int | None = None,
    fsync: bool = True,
    shown: str = "",
    encoding: str = "utf-8",
) -> bool:
    """Replace the entry ``name`` of the directory ``dir_fd`` with ``data`` atomically (a temporary file in that
    directory, renamed over it); an existing symbolic link or directory there is refused. Returns True when the
    file existed before; keeps its permission bits unless ``mode`` is given. A text is encoded and written a
    megabyte at a time (streamed: no second, encoded copy of a big text; an encoding error leaves nothing).
    ``fsync=False`` renames without waiting for the disk (still atomic for readers)."""
    where = shown or name
    existed = False
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        existed = True
        if stat.S_ISLNK(st.st_mode):
            raise SymlinkError(where)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", where)
        keep = stat.S_IMODE(st.st_mode)
    except FileNotFoundError:
        keep = 0o666 & ~_umask()
    if mode is not None:
        keep = mode
    import secrets  # not at import: it pulls in random

    tmp = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            _write_data(fh, data, encoding)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), keep)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    if fsync:
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
    return existed


_ENCODE_CHARS = 1 << 20


def _write_data(fh: Any, data: bytes | str, encoding: str) -> None:
    """Write ``data``; a text is encoded a megabyte at a time."""
    if not isinstance(data, str):
        fh.write(data)
        return
    if len(data) <= _ENCODE_CHARS:
        fh.write(data.encode(encoding))
        return
    import codecs

    encoder = codecs.getincrementalencoder(encoding)()
    for start in range(0, len(data), _ENCODE_CHARS):
        fh.write(encoder.encode(data[start : start + _ENCODE_CHARS]))
    fh.write(encoder.encode("", final=True))


def unlink_nofollow(path: str | os.PathLike[str]) -> None:
    """Remove the file ``path``; no part of the path may be a symbolic link (the last one is removed as it is)."""
    parts = _parts(path)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "is a directory", "/")
    dir_fd = open_dir_nofollow("/" + "/".join(parts[:-1]))
    try:
        os.unlink(parts[-1], dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def which(name: str, path: str | None = None) -> str | None:
    """The executable file ``shutil.which(name, path=path)`` finds on ``path`` (default ``PATH``), or None."""
    if os.path.dirname(name):
        return name if _runnable(name) else None
    if path is None:
        path = os.environ.get("PATH")
        if path is None:
            try:
                path = os.confstr("CS_PATH")
            except (AttributeError, ValueError):
                path = os.defpath
    if not path:
        return None
    seen: set[str] = set()
    for folder in path.split(os.pathsep):
        if folder in seen:
            continue
        seen.add(folder)
        candidate = os.path.join(folder, name)
        if _runnable(candidate):
            return candidate
    return None


def _runnable(path: str) -> bool:
    return os.access(path, os.X_OK) and not os.path.isdir(path)
