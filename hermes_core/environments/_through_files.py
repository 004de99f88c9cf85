"""``FilesEnvironment``: an environment whose file operations are those of a files object, on absolute paths.

Every kind keeps its files behind one object (the local kind's ``RootedFiles``, a container's ``OwnedFiles``, an
SSH host's ``SftpFiles``); this base makes a relative path absolute (from the workspace) and hands it over.
"""

from __future__ import annotations

import abc
from typing import BinaryIO, Protocol

from ._base import Environment, FileInfo

__all__ = ["Files", "FilesEnvironment"]


class Files(Protocol):
    """The file operations a kind's files object offers, on absolute paths (see ``Environment``'s)."""

    def resolve(self, path: str) -> str: ...

    def stat(self, path: str) -> FileInfo: ...

    def open_read(self, path: str) -> BinaryIO: ...

    def write(
        self, path: str, data: bytes, *, create_parents: bool = True, mode: int | None = None
    ) -> bool: ...

    def remove(self, path: str) -> None: ...

    def listdir(self, path: str) -> list[str]: ...

    def hidden_within(self, path: str) -> list[str]: ...


class FilesEnvironment(Environment):
    """An ``Environment`` whose file operations are its ``files`` object's."""

    @property
    @abc.abstractmethod
    def files(self) -> Files:
        """This session's files object (made on first use)."""

    def resolve(self, path: str) -> str:
        return self.files.resolve(self.absolute(path))

    def stat(self, path: str) -> FileInfo:
        return self.files.stat(self.absolute(path))

    def open_read(self, path: str) -> BinaryIO:
        return self.files.open_read(self.absolute(path))

    def write(self, path: str, data: bytes, *, create_parents: bool = True, mode: int | None = None) -> bool:
        return self.files.write(self.absolute(path), data, create_parents=create_parents, mode=mode)

    def remove(self, path: str) -> None:
        self.files.remove(self.absolute(path))

    def listdir(self, path: str) -> list[str]:
        return self.files.listdir(self.absolute(path))

    def hidden_within(self, path: str) -> list[str]:
        return self.files.hidden_within(self.absolute(path))
