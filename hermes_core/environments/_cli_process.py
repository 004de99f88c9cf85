"""``ClientProcess``: a process on the other side of a local client (``podman exec``, ``docker exec``).

The client's pipes (or a terminal of ours that the client puts in raw mode and relays to a terminal on the
other side) carry the process's input and output; its exit status is the process's. Ending it goes through
the environment (``end_session``: the kill script over another exec), since killing the client would leave
the process running where it is.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Callable
from typing import IO

from ._piped import PipedProcess

__all__ = ["ClientProcess"]


class ClientProcess(PipedProcess):
    """A launcher started through a local client (see the module docstring).

    ``session``: returns the launcher's pid on the other side once it wrote it (None before); ``end_session``
    ends that session (``grace`` seconds between SIGTERM and SIGKILL) and says what it did; ``on_close`` runs
    once when the process is closed.
    """

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        *,
        master: int | None,
        session: Callable[[], int | None],
        end_session: Callable[[int, float], str],
        on_close: Callable[[ClientProcess], None] | None = None,
    ) -> None:
        self._popen = popen
        self._master = master
        self._session = session
        self._end_session = end_session
        self._on_close = on_close
        self.pty = master is not None
        self.pid = None
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"<ClientProcess pid={self.remote_pid} pty={self.pty} returncode={self.returncode}>"

    def _pipes(self) -> tuple[IO[bytes] | None, IO[bytes] | None]:
        return self._popen.stdin, self._popen.stdout

    @property
    def remote_pid(self) -> int | None:
        """The launcher's pid on the other side (the session it leads), once known."""
        if self.pid is None:
            self.pid = self._session()
        return self.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    def close_stdin(self) -> None:
        if self._master is not None:
            self.write(b"\x04")  # the terminal on the other side turns Ctrl-D into end-of-file
            return
        self._close_stdin_pipe()

    def wait(self, timeout: float | None = None) -> bool:
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def terminate(self, grace: float = 2.0) -> str:
        if self.returncode is not None:
            return "already exited"
        pid = self.remote_pid
        note = self._end_session(pid, grace) if pid is not None else "killed (its client)"
        if not self.wait(grace + 5):
            self._popen.kill()
            self._popen.wait()
        return note

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self.returncode is None:
            with contextlib.suppress(Exception):
                self.terminate(0.5)
        self._release_io()
        if self._on_close is not None:
            self._on_close(self)
