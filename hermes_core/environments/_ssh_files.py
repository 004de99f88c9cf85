"""The file operations of the ``ssh`` kind, over SFTP on the session's connection.

Paths are the remote host's. Reads reach what the remote user can read, except the folders hidden from the
file tools (the remote ``~/.ssh``); writes land only in the remote workspace, ``/tmp`` and the folders
``[environment.ssh] read_write`` grants (``ReadOnlyPath`` elsewhere). A write goes to a temporary file in the
same folder, renamed over the target (``posix-rename``), so a reader sees the old file or the new one. A read
fetches the file into a local anonymous copy (up to ``MAX_READ_BYTES``), which the file tools page through.
"""

from __future__ import annotations

import errno
import posixpath
import secrets
import stat
import tempfile
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, BinaryIO, TypeVar

from ..fileio import SymlinkError
from ._base import FileInfo, NotRegularFile, PathOutsideRoots, ReadOnlyPath

__all__ = ["SftpFiles"]

T = TypeVar("T")
Runner = Callable[[Coroutine[Any, Any, Any], "float | None"], Any]
_KINDS = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink"}
_TIMEOUT = 60.0
MAX_READ_BYTES = 256 * 2**20


def _within(path: str, root: str) -> bool:
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


class SftpFiles:
    """File operations over an asyncssh SFTP client (``sftp``), driven from sync code through ``run``."""

    def __init__(
        self, sftp: Any, run: Runner, *, writable: Sequence[str], hidden: Sequence[str] = ()
    ) -> None:
        self._sftp = sftp
        self._run = run
        self.writable = [w.rstrip("/") or "/" for w in writable]
        self.hidden = [h.rstrip("/") for h in hidden]

    def _call(self, coro: Coroutine[Any, Any, T], path: str) -> T:
        import asyncssh

        try:
            result: T = self._run(coro, _TIMEOUT)
            return result
        except asyncssh.SFTPNoSuchFile:
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", path) from None
        except asyncssh.SFTPPermissionDenied:
            raise PermissionError(errno.EACCES, "permission denied on the remote host", path) from None
        except asyncssh.SFTPFailure as exc:
            raise OSError(errno.EIO, f"the remote host refused: {exc.reason}", path) from None
        except asyncssh.SFTPError as exc:
            raise OSError(errno.EIO, f"SFTP error: {exc.reason}", path) from None

    def _check(self, path: str, *, write: bool = False) -> None:
        for hidden in self.hidden:
            if _within(path, hidden):
                raise PathOutsideRoots(path, "it is hidden from the file tools on the remote host")
        if write and not any(_within(path, root) for root in self.writable):
            raise ReadOnlyPath(
                path,
                "the file tools write only in the remote workspace, /tmp and [environment.ssh] read_write",
            )

    # -- resolving ---------------------------------------------------------------------------------------

    def resolve(self, path: str) -> str:
        """The remote real path (links followed); missing trailing parts are kept as they are."""
        path = posixpath.normpath(path)
        missing: list[str] = []
        current = path
        while True:
            try:
                real: str = self._call(self._sftp.realpath(current), path)
                break
            except FileNotFoundError:
                if current == "/":
                    raise
                current, name = posixpath.split(current)
                missing.insert(0, name)
        resolved = posixpath.join(real, *missing) if missing else real
        self._check(resolved)
        return resolved

    # -- the operations ----------------------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        self._check(path)
        attrs = self._call(self._sftp.lstat(path), path)
        mode = attrs.permissions or 0
        return FileInfo(
            path=path,
            kind=_KINDS.get(stat.S_IFMT(mode), "other"),
            size=attrs.size or 0,
            mtime=float(attrs.mtime or 0),
            mode=mode,
        )

    def open_read(self, path: str) -> BinaryIO:
        info = self.stat(path)
        if info.kind == "symlink":
            raise SymlinkError(path)
        if info.kind == "dir":
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if info.kind != "file":
            raise NotRegularFile(errno.EINVAL, "not a regular file", path)
        if info.size > MAX_READ_BYTES:
            raise OSError(
                errno.EFBIG,
                f"the file is {info.size} bytes, more than the {MAX_READ_BYTES // 2**20} MiB the file tools fetch "
                "over SSH; read parts of it with terminal (head, tail, grep, sed -n)",
                path,
            )
        copy = tempfile.TemporaryFile()  # noqa: SIM115 - returned open; a local copy: the file tools get a real, seekable file

        async def fetch() -> None:
            async with self._sftp.open(path, "rb", encoding=None) as handle:
                while chunk := await handle.read(1 << 20):
                    copy.write(chunk)

        try:
            self._call(fetch(), path)
            copy.seek(0)
        except BaseException:
            copy.close()
            raise
        return copy  # type: ignore[return-value]

    def write(self, path: str, data: bytes, *, create_parents: bool = True, mode: int | None = None) -> bool:
        import asyncssh

        self._check(path, write=True)
        folder, name = posixpath.split(path)
        existed, keep = False, 0o644
        try:
            info = self.stat(path)
            existed = True
            if info.kind == "symlink":
                raise SymlinkError(path)
            if info.kind == "dir":
                raise IsADirectoryError(errno.EISDIR, "is a directory", path)
            keep = stat.S_IMODE(info.mode)
        except FileNotFoundError:
            if create_parents:
                self._call(self._sftp.makedirs(folder, exist_ok=True), folder)
        if mode is not None:
            keep = mode
        tmp = posixpath.join(folder, f".{name[:200]}.{secrets.token_hex(6)}.tmp")
        attrs = asyncssh.SFTPAttrs(permissions=0o600)

        async def put() -> None:
            flags = asyncssh.FXF_WRITE | asyncssh.FXF_CREAT | asyncssh.FXF_EXCL
            async with self._sftp.open(tmp, flags, attrs=attrs, encoding=None) as handle:
                await handle.write(data)
                await handle.chmod(keep)
            await self._sftp.posix_rename(tmp, path)

        try:
            self._call(put(), path)
        except BaseException:
            try:
                self._run(self._sftp.remove(tmp), _TIMEOUT)
            except Exception:  # it may never have been made
                pass
            raise
        return existed

    def remove(self, path: str) -> None:
        self._check(path, write=True)
        info = self.stat(path)
        if info.kind == "dir":
            self._call(self._sftp.rmdir(path), path)
        else:
            self._call(self._sftp.remove(path), path)

    def listdir(self, path: str) -> list[str]:
        self._check(path)
        names: list[str] = self._call(self._sftp.listdir(path), path)
        return sorted(n for n in names if n not in (".", ".."))

    def hidden_within(self, path: str) -> list[str]:
        return [h for h in self.hidden if _within(h, path) and h != path]
