"""``LocalProcess``: a process of the local environment, behind the sandbox's walls, with pipes or a terminal.

With ``pty=True`` the command gets the slave side of a new pseudo-terminal as stdin, stdout and stderr and as
its controlling terminal (``setsid -c`` inside the walls), so REPLs prompt and programs that read ``/dev/tty``
(``ssh-keygen``, ``npm init``) work; hermes keeps the master side. The terminal is the command's own: nothing
typed there reaches the host's terminal.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from ._piped import PipedProcess

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


class LocalProcess(PipedProcess):
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

    def _pipes(self) -> tuple[IO[bytes] | None, IO[bytes] | None]:
        return self._proc.popen.stdin, self._proc.stdout

    def __repr__(self) -> str:
        return f"<LocalProcess pid={self.pid} pty={self.pty} returncode={self.returncode}>"

    @property
    def returncode(self) -> int | None:
        return self._proc.poll()

    def close_stdin(self) -> None:
        if self._master is not None:
            import termios

            try:
                eof = termios.tcgetattr(self._master)[6][termios.VEOF]
            except (OSError, termios.error):
                eof = b"\x04"
            self.write(eof if isinstance(eof, bytes) else bytes([eof]))
            return
        self._close_stdin_pipe()

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
        self._release_io()
        self._proc.release()
        if self._on_close is not None:
            self._on_close(self)
