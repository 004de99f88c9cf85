"""``LocalProcess``: a process of the local environment, behind the sandbox's walls, with pipes or a terminal.

With ``pty=True`` the command gets the slave side of a new pseudo-terminal as stdin, stdout and stderr and as
its controlling terminal (``setsid -c`` inside the walls), so REPLs prompt and programs that read ``/dev/tty``
(``ssh-keygen``, ``npm init``) work; hermes keeps the master side. The terminal is the command's own: nothing
typed there reaches the host's terminal.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._base import Process

if TYPE_CHECKING:
    from ..sandbox import SandboxProcess

__all__ = ["LocalProcess", "open_pty"]

ROWS, COLUMNS = 50, 200


def open_pty() -> tuple[int, int]:
    """A new pseudo-terminal ``(master, slave)`` of ``ROWS`` x ``COLUMNS``."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    with contextlib.suppress(OSError):
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    os.set_inheritable(master, False)
    return master, slave


class LocalProcess(Process):
    """A ``SandboxProcess`` seen through the ``Process`` contract (see ``hermes_core.environments``).

    When the command exits, whatever it left running ends with it (as for ``run``) once ``wait`` sees the exit.
    """

    def __init__(
        self,
        proc: SandboxProcess,
        *,
        master: int | None = None,
        on_close: Callable[[LocalProcess], None] | None = None,
    ) -> None:
        self._proc = proc
        self._master = master
        self.pid = proc.pid
        self.pty = master is not None
        self._on_close = on_close
        self._lock = threading.Lock()
        self._reaped = False
        self._closed = False

    def __repr__(self) -> str:
        return f"<LocalProcess pid={self.pid} pty={self.pty} returncode={self.returncode}>"

    @property
    def returncode(self) -> int | None:
        return self._proc.poll()

    def read(self, size: int = 65536) -> bytes:
        if self._master is not None:
            try:
                return os.read(self._master, size)
            except OSError as exc:
                if exc.errno in (errno.EIO, errno.EBADF):  # every slave side is closed: the end
                    return b""
                raise
        stream = self._proc.stdout
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
                written = os.write(self._master, view)
                view = view[written:]
            return
        stdin = self._proc.popen.stdin
        if stdin is None or stdin.closed:
            raise BrokenPipeError(errno.EPIPE, "the process's input is closed")
        stdin.write(data)
        stdin.flush()

    def close_stdin(self) -> None:
        if self._master is not None:
            import termios

            try:
                eof = termios.tcgetattr(self._master)[6][termios.VEOF]
            except (OSError, termios.error):
                eof = b"\x04"
            self.write(eof if isinstance(eof, bytes) else bytes([eof]))
            return
        stdin = self._proc.popen.stdin
        if stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()

    def wait(self, timeout: float | None = None) -> bool:
        if not self._proc.wait(timeout):
            return False
        with self._lock:
            reap, self._reaped = not self._reaped, True
        if reap:
            self._proc.end_leftovers()
        return True

    def terminate(self, grace: float = 2.0) -> str:
        return self._proc.terminate(grace)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._proc.has_leftovers():
            self._proc.terminate(0.5)
        for stream in (self._proc.popen.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
        if self._master is not None:
            with contextlib.suppress(OSError):
                os.close(self._master)
            self._master = None
        self._proc.release()
        if self._on_close is not None:
            self._on_close(self)
