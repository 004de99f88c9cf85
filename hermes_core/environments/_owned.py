"""``OwnedFiles``: ``RootedFiles`` whose writes belong to the user commands run as on the other side.

When hermes runs as root and a container runs its commands as another user, a file the file tools write (and
the folders they make for it) is handed to that user, so the next command can change it; a file that existed
keeps its owner. The ownership changes go through the same directory descriptors as the write (no path is
followed again), so a link swapped in meanwhile cannot redirect them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ._rooted import Root, RootedFiles

__all__ = ["OwnedFiles"]


class OwnedFiles(RootedFiles):
    """``RootedFiles`` that give what they create to ``owner`` (``(uid, gid)``; None: leave it to hermes)."""

    def __init__(
        self,
        roots: Iterable[Root],
        *,
        hidden: Iterable[Path] = (),
        read_only: Iterable[Path] = (),
        links: Mapping[str, str] | None = None,
        owner: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(roots, hidden=hidden, read_only=read_only, links=links)
        self.owner = owner

    def write(self, path: str, data: bytes, *, create_parents: bool = True, mode: int | None = None) -> bool:
        if self.owner is None:
            return super().write(path, data, create_parents=create_parents, mode=mode)
        made = self._missing_folders(path) if create_parents else []
        before = None
        with contextlib.suppress(OSError):
            before = self._owner_of(path)
        existed = super().write(path, data, create_parents=create_parents, mode=mode)
        for folder in made:
            self._chown(folder, self.owner)
        self._chown(path, before or self.owner)
        return existed

    def _owner_of(self, path: str) -> tuple[int, int]:
        dir_fd, name = self._parent(path, create=False)
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        finally:
            os.close(dir_fd)
        return st.st_uid, st.st_gid

    def _missing_folders(self, path: str) -> list[str]:
        """The folders above ``path`` that do not exist yet, top first."""
        missing: list[str] = []
        folder = os.path.dirname(path)
        while folder not in ("/", ""):
            try:
                self.stat(folder)
                break
            except FileNotFoundError:
                missing.append(folder)
            except OSError:
                break
            folder = os.path.dirname(folder)
        return missing[::-1]

    def _chown(self, path: str, owner: tuple[int, int]) -> None:
        with contextlib.suppress(OSError):
            dir_fd, name = self._parent(path, create=False)
            try:
                os.chown(name, owner[0], owner[1], dir_fd=dir_fd, follow_symlinks=False)
            finally:
                os.close(dir_fd)
