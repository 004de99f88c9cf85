"""``PipedProcess``: the input and output of a process held as a pseudo-terminal's master side or as pipes.

The local kind (a sandboxed command) and the client kinds (``podman exec``, ``docker exec``) hold their
processes the same way; only where the pipes come from differs.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import os
from typing import IO

from ._base import Process

__all__ = ["PipedProcess"]


class PipedProcess(Process):
    """A ``Process`` whose I/O is the master side of a pty (``_master``) or the pipes ``_pipes()`` returns."""

    _master: int | None = None

    @abc.abstractmethod
    def _pipes(self) -> tuple[IO[bytes] | None, IO[bytes] | None]:
        """``(stdin, stdout)``: the process's pipes (None where it has none)."""

    def read(self, size: int = 65536) -> bytes:
        if self._master is not None:
            try:
                return os.read(self._master, size)
            except OSError as exc:
                if exc.errno in (errno.EIO, errno.EBADF):  # every slave side is closed: the end
                    return b""
                raise
        stream = self._pipes()[1]
        if stream is None:
            return b""
        read = getattr(stream, "read1", stream.read)
        try:
            data: bytes = read(size)
        except (OSError, ValueError):
            return b""
        return data

    def write(self, data: bytes) -> None:
        if self._master is not None:
            view = memoryview(data)
            while view:
                view = view[os.write(self._master, view) :]
            return
        stdin = self._pipes()[0]
        if stdin is None or stdin.closed:
            raise BrokenPipeError(errno.EPIPE, "the process's input is closed")
        stdin.write(data)
        stdin.flush()

    def _close_stdin_pipe(self) -> None:
        stdin = self._pipes()[0]
        if stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()

    def _release_io(self) -> None:
        """Close the pipes and the pty's master side (once the process is ended)."""
        for stream in self._pipes():
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
        if self._master is not None:
            with contextlib.suppress(OSError):
                os.close(self._master)
            self._master = None
