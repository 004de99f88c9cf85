"""``RootedFiles``: file operations that cannot leave a set of folders, whatever the path says.

Each root is a folder of this host shown at a path of the environment (the workspace at its own path, the
session's private folder as ``/tmp``, system folders read-only...). Every operation maps its path to the deepest
root that holds it and opens it beneath a directory descriptor of that root with ``openat2`` and
``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`` (where the kernel has no ``openat2``, one part
at a time with ``O_NOFOLLOW``): ``..``, an absolute path or a symbolic link cannot lead anywhere else, and a
path that no root holds is refused (``PathOutsideRoots``). Operations take resolved paths; ``resolve`` follows
symbolic links the way a command inside would see them (an absolute link is followed through the roots, never
through the host's own tree). Hidden paths (credentials, hermes's own folders) are refused even inside a root,
and writes only land in writable roots outside the ``read_only`` paths.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..fileio import (
    RESOLVE_BENEATH,
    RESOLVE_NO_MAGICLINKS,
    RESOLVE_NO_SYMLINKS,
    SymlinkError,
    atomic_write_at,
    openat2,
    openat2_available,
)
from ._base import FileInfo, NotRegularFile, PathOutsideRoots, ReadOnlyPath

__all__ = ["Root", "RootedFiles"]

_STRICT = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
_FOLLOW = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
_MAX_LINKS = 40
_PATH = getattr(os, "O_PATH", os.O_RDONLY)
_DIR = os.O_DIRECTORY | os.O_CLOEXEC
_KINDS = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink"}


@dataclass(frozen=True, slots=True)
class Root:
    """A folder of this host (``host``) shown at ``path`` in the environment, writable or not."""

    path: str
    host: Path
    writable: bool = False


def _split(path: str) -> list[str]:
    if not path.startswith("/"):
        raise ValueError(f"expected an absolute path, got {path!r}")
    if "\x00" in path:
        raise ValueError("the path contains a NUL byte")
    return [p for p in path.split("/") if p and p != "."]


def _within(path: str, root: str) -> bool:
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def _host_within(path: Path | str, root: Path | str) -> bool:
    p, r = str(path), str(root)
    return p == r or p.startswith(r.rstrip("/") + "/")


class RootedFiles:
    """File operations beneath ``roots`` (see the module docstring).

    ``hidden``: host paths never reachable (unless a root lies inside one: a grant more precise than the hide);
    ``read_only``: host paths kept read-only inside writable roots; ``links``: symbolic links of the
    environment's own tree that are not in any root (``/bin`` -> ``/usr/bin``).
    """

    def __init__(
        self,
        roots: Iterable[Root],
        *,
        hidden: Iterable[Path] = (),
        read_only: Iterable[Path] = (),
        links: Mapping[str, str] | None = None,
    ) -> None:
        self.roots = sorted(
            {r.path.rstrip("/") or "/": r for r in roots}.values(), key=lambda r: -len(_split(r.path))
        )
        self.hidden = [Path(p) for p in hidden]
        self.read_only = [Path(p) for p in read_only]
        self.links = dict(links or {})
        # per root: its depth, and the hidden and kept-read-only paths that lie inside it (the others cannot
        # match a path of that root, or are overruled by it: a grant more precise than the hide)
        self._depth = {r.path: len(_split(r.path)) for r in self.roots}
        self._by_path = {r.path: r for r in self.roots}
        self._hosts = {r.path: str(r.host).rstrip("/") for r in self.roots}
        self._hides = {r.path: self._inside(r, self.hidden) for r in self.roots}
        self._keeps = {r.path: self._inside(r, self.read_only) for r in self.roots}
        # the folders above a root (``/home`` above ``/home/me/project``), and the roots with a root inside them
        self._above = {
            "/" + "/".join(_split(r.path)[:n]) for r in self.roots for n in range(self._depth[r.path])
        } - {r.path for r in self.roots}
        self._nested = {
            r.path for r in self.roots if any(_within(o.path, r.path) and o is not r for o in self.roots)
        }
        self._fds: dict[str, int] = {}
        self._lock = threading.Lock()
        self._strict = openat2_available()

    def __repr__(self) -> str:
        return f"<RootedFiles {', '.join(f'{r.path}={r.host}' for r in self.roots)}>"

    # -- mapping -------------------------------------------------------------------------------------------

    @staticmethod
    def _inside(root: Root, paths: list[Path]) -> list[str]:
        return [str(p) for p in paths if _host_within(p, root.host) and not _host_within(root.host, p)]

    def root_of(self, path: str) -> tuple[Root, list[str]] | None:
        """The deepest root holding the environment path ``path`` and the parts below it."""
        parts = _split(path)
        for depth in range(len(parts), -1, -1):
            root = self._by_path.get("/" + "/".join(parts[:depth]))
            if root is not None:
                return root, parts[depth:]
        return None

    def _host_of(self, root: Root, rel: list[str]) -> str:
        return "/".join([self._hosts[root.path], *rel]) if rel else self._hosts[root.path] or "/"

    def host_path(self, path: str) -> Path | None:
        """Where ``path`` (resolved) lies on this host, or None when no root holds it (nothing is checked)."""
        found = self.root_of(path)
        if found is None:
            return None
        root, rel = found
        return root.host.joinpath(*rel)

    def env_path(self, host: str | Path) -> str | None:
        """The environment path of a host path beneath one of the roots (the inverse of ``host_path``)."""
        text = str(host)
        best: tuple[int, str] | None = None
        for root in self.roots:
            if _host_within(text, root.host):
                depth = len(root.host.parts)
                if best is None or depth > best[0]:
                    rest = text[len(str(root.host).rstrip("/")) :]
                    best = (depth, (root.path.rstrip("/") + rest) or "/")
        return best[1] if best else None

    def _on_the_way(self, path: str) -> bool:
        """Whether ``path`` is a folder above a root (``/home`` above ``/home/me/project``)."""
        return path in self._above

    def _root_fd(self, root: Root) -> int:
        fd = self._fds.get(root.path)
        if fd is None:
            with self._lock:
                fd = self._fds.get(root.path)
                if fd is None:
                    fd = os.open(root.host, _PATH | _DIR)
                    self._fds[root.path] = fd
        return fd

    def _refusal(self, host: str, root: Root, write: bool, path: str) -> OSError | None:
        hides, keeps = self._hides[root.path], self._keeps[root.path] if write else ()
        if hides or keeps:
            text = host
            if any(_host_within(text, hidden) for hidden in hides):
                return PathOutsideRoots(path, "it is hidden in this environment")
            if any(_host_within(text, kept) for kept in keeps):
                return ReadOnlyPath(path, "it is kept read-only (code the host runs)")
        if write and not root.writable:
            return ReadOnlyPath(path)
        return None

    def visible(self, path: str) -> bool:
        """Whether the resolved environment path ``path`` may be read here (a root holds it, nothing hides it)."""
        found = self.root_of(path)
        if found is None:
            return False
        root, rel = found
        return self._refusal(self._host_of(root, rel), root, False, path) is None

    def hidden_within(self, path: str) -> list[str]:
        """Environment paths of the hidden folders and files beneath ``path``."""
        out = []
        for hidden in self.hidden:
            shown = self.env_path(hidden)
            if shown is not None and _within(shown, path) and shown != path:
                out.append(shown)
        return out

    # -- opening beneath a root ----------------------------------------------------------------------------

    def _open_rel(self, base: int, rel: Sequence[str], flags: int, mode: int = 0) -> int:
        """``rel`` opened beneath ``base`` with no symbolic link, ``..`` or mount trick on the way."""
        if self._strict:
            return openat2(base, "/".join(rel) or ".", flags, mode, _STRICT)
        fd = os.dup(base)
        try:
            for part in rel[:-1]:
                try:
                    child = os.open(part, _PATH | _DIR | os.O_NOFOLLOW, dir_fd=fd)
                except NotADirectoryError:
                    if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                        raise SymlinkError(part) from None
                    raise
                os.close(fd)
                fd = child
            if not rel:
                return os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=fd)
            return os.open(rel[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
        finally:
            os.close(fd)

    def _open(self, path: str, flags: int, *, write: bool = False, mode: int = 0) -> tuple[int, Root, str]:
        found = self.root_of(path)
        if found is None:
            raise PathOutsideRoots(path)
        root, rel = found
        host = self._host_of(root, rel)
        refused = self._refusal(host, root, write, path)
        if refused is not None:
            raise refused
        try:
            fd = self._open_rel(self._root_fd(root), rel, flags, mode)
        except OSError as exc:
            raise self._error(exc, path) from None
        return fd, root, host

    @staticmethod
    def _error(exc: OSError, path: str) -> OSError:
        if exc.errno == errno.ELOOP or isinstance(exc, SymlinkError):
            return SymlinkError(path)
        if exc.errno == errno.EXDEV:
            return PathOutsideRoots(path, "it leads outside the folders this environment shows")
        return type(exc)(exc.errno, exc.strerror, path) if exc.errno else exc

    # -- the operations ------------------------------------------------------------------------------------

    def open_read(self, path: str) -> BinaryIO:
        fd, _, _ = self._open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", path)
            if not stat.S_ISREG(mode):
                raise NotRegularFile(errno.EINVAL, "not a regular file", path)
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise

    def stat(self, path: str) -> FileInfo:
        fd, _, _ = self._open(path, _PATH | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "other")
        return FileInfo(
            path="/" + "/".join(_split(path)), kind=kind, size=st.st_size, mtime=st.st_mtime, mode=st.st_mode
        )

    def listdir(self, path: str) -> list[str]:
        fd, _, _ = self._open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            return sorted(os.listdir(fd))
        finally:
            os.close(fd)

    def _parent(self, path: str, *, create: bool) -> tuple[int, str]:
        """A descriptor of the folder that holds ``path`` (made when ``create``), checked for writing."""
        parts = _split(path)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        parent = "/" + "/".join(parts[:-1])
        try:
            fd, _, _ = self._open(parent, os.O_RDONLY | os.O_DIRECTORY, write=True)
        except FileNotFoundError:
            if not create:
                raise
            fd = self._make_dirs(parent)
        return fd, parts[-1]

    def _make_dirs(self, path: str) -> int:
        found = self.root_of(path)
        if found is None:
            raise PathOutsideRoots(path)
        root, rel = found
        refused = self._refusal(self._host_of(root, rel), root, True, path)
        if refused is not None:
            raise refused
        fd = os.dup(self._root_fd(root))
        try:
            fd = self._reopen(fd, [], path)
            for part in rel:
                try:
                    child = self._open_rel(fd, [part], os.O_RDONLY | os.O_DIRECTORY)
                except FileNotFoundError:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                    try:
                        child = self._open_rel(fd, [part], os.O_RDONLY | os.O_DIRECTORY)
                    except OSError as exc:
                        raise self._error(exc, path) from None
                except OSError as exc:
                    raise self._error(exc, path) from None
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _reopen(self, fd: int, rel: list[str], path: str) -> int:
        """An ``O_PATH`` root descriptor reopened as a real directory (needed for ``mkdirat``)."""
        try:
            new = self._open_rel(fd, rel, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise self._error(exc, path) from None
        finally:
            os.close(fd)
        return new

    def write(self, path: str, data: bytes, *, create_parents: bool = True, mode: int | None = None) -> bool:
        dir_fd, name = self._parent(path, create=create_parents)
        try:
            try:
                return atomic_write_at(dir_fd, name, data, mode=mode, shown=path)
            except SymlinkError:
                raise SymlinkError(path) from None
        finally:
            os.close(dir_fd)

    def remove(self, path: str) -> None:
        dir_fd, name = self._parent(path, create=False)
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                os.rmdir(name, dir_fd=dir_fd)
            else:
                os.unlink(name, dir_fd=dir_fd)
        except OSError as exc:
            raise self._error(exc, path) from None
        finally:
            os.close(dir_fd)

    def local_path(self, path: str) -> Path | None:
        """The host path of the resolved environment path ``path`` after the same checks as a read."""
        try:
            fd, _, host = self._open(path, _PATH | os.O_NOFOLLOW)
        except OSError:
            return None
        os.close(fd)
        return Path(host)

    # -- resolving -----------------------------------------------------------------------------------------

    def resolve(self, path: str) -> str:
        """The real environment path of ``path`` (see ``Environment.resolve``)."""
        parts = _split(path)
        if self._strict:
            fast = self._resolve_fast(parts)
            if fast is not None:
                return fast
        return self._resolve_walk(parts)

    def _resolve_fast(self, parts: list[str]) -> str | None:
        """One ``openat2`` with no link allowed: a path without links is its own real path. Else the parent
        folder's links followed beneath the root (``_resolve_links``); None when the careful walk must decide."""
        if ".." in parts:
            return None
        joined = "/" + "/".join(parts)
        if joined in self._above:
            return joined
        if any(_within(joined, link) for link in self.links):
            return None
        found = self.root_of(joined)
        if found is None:
            return None
        root, rel = found
        if not rel:
            return joined
        base = self._root_fd(root)
        try:
            os.close(openat2(base, "/".join(rel), _PATH, 0, _STRICT))
        except FileNotFoundError:
            try:  # a missing last part (a file to create): its folder must be link-free too
                os.close(openat2(base, "/".join(rel[:-1]) or ".", _PATH | os.O_DIRECTORY, 0, _STRICT))
            except OSError:
                return self._resolve_links(parts, root, rel)
        except OSError:
            return self._resolve_links(parts, root, rel)
        refused = self._refusal(self._host_of(root, rel), root, False, joined)
        if refused is not None:
            raise refused
        return joined

    def _resolve_links(self, parts: list[str], root: Root, rel: list[str]) -> str | None:
        """The parent folder with one ``openat2`` beneath the deepest root (following links that stay beneath
        it), then the last part looked at without following it; None when the careful walk must decide."""
        try:
            fd = openat2(self._root_fd(root), "/".join(rel[:-1]) or ".", _PATH | os.O_DIRECTORY, 0, _FOLLOW)
        except OSError:
            return None  # missing, an absolute link, a link out: the careful walk decides
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
            last = os.stat(rel[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            last = None  # a missing last part is kept as it is
        except OSError:
            return None
        finally:
            os.close(fd)
        if last is not None and stat.S_ISLNK(last.st_mode):
            return None
        host_root = self._hosts[root.path]
        if not real.startswith("/") or real.endswith(" (deleted)") or not _host_within(real, host_root):
            return None
        resolved = root.path.rstrip("/") + real[len(host_root) :] + "/" + rel[-1]
        if root.path in self._nested:  # it may have ended in a folder another root covers: walk to see there
            again = self.root_of(resolved)
            if again is None or again[0] is not root or self._on_the_way(resolved):
                return None
        refused = self._refusal(real.rstrip("/") + "/" + rel[-1], root, False, resolved)
        if refused is not None:
            raise refused
        return resolved

    def _resolve_walk(self, parts: list[str]) -> str:
        done: list[str] = []
        queue = list(parts)
        hops = 0
        while queue:
            part = queue.pop(0)
            if part == "..":
                if done:
                    done.pop()
                continue
            here = "/" + "/".join([*done, part])
            link = self.links.get(here)
            if link is None:
                target = self._readlink(here)
                if target is None:
                    done.append(part)
                    continue
                if not target:  # missing: the rest stays as it is, resolved as words
                    rest = posixpath.normpath("/".join([*done, part, *queue]))
                    return "/" + rest.lstrip("/") if rest != "." else "/"
                link = target
            hops += 1
            if hops > _MAX_LINKS:
                raise OSError(errno.ELOOP, "too many levels of symbolic links", "/" + "/".join(parts))
            if link.startswith("/"):
                done = []
            queue = [p for p in link.split("/") if p and p != "."] + queue
        return "/" + "/".join(done)

    def _readlink(self, path: str) -> str | None:
        """A link's target, None for anything else, "" when ``path`` does not exist (no link has an empty
        target)."""
        if self._on_the_way(path):
            return None  # a folder above a deeper root: the root is shown there, whatever lies beneath
        found = self.root_of(path)
        if found is None:
            raise PathOutsideRoots(path)
        root, rel = found
        if not rel:
            return None
        refused = self._refusal(self._host_of(root, rel), root, False, path)
        if refused is not None:
            raise refused
        try:
            parent = self._open_rel(self._root_fd(root), rel[:-1], _PATH | os.O_DIRECTORY)
        except FileNotFoundError:
            return ""
        except OSError as exc:
            raise self._error(exc, path) from None
        try:
            st = os.stat(rel[-1], dir_fd=parent, follow_symlinks=False)
            if not stat.S_ISLNK(st.st_mode):
                return None
            return os.readlink(rel[-1], dir_fd=parent)
        except FileNotFoundError:
            return ""
        finally:
            os.close(parent)

    def close(self) -> None:
        with self._lock:
            fds, self._fds = list(self._fds.values()), {}
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
