"""``SshProcess``: a process started on the ``ssh`` kind's remote host, on a channel of the session's connection
(a remote terminal with ``pty``). Ending it goes over another channel (the kill script of ``_remote`` for its
whole session): closing the channel alone would leave it running there."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ._base import Process
from ._ssh_loop import run as _run

if TYPE_CHECKING:
    from ._ssh import SshEnvironment

__all__ = ["SshProcess"]


class SshProcess(Process):
    """A process started on the remote host (see ``Environment.start``)."""

    def __init__(
        self, env: SshEnvironment, proc: Any, control_file: str, state_file: str, *, pty: bool
    ) -> None:
        self._env = env
        self._proc = proc
        self._control_file = control_file
        self._state_file = state_file
        self.pty = pty
        self.pid = None
        self._closed = False

    @property
    def remote_pid(self) -> int | None:
        if self.pid is None:
            self.pid = _run(self._env._remote_pid(self._control_file), 30)
        return self.pid

    @property
    def returncode(self) -> int | None:
        status = self._proc.exit_status
        if status is None and self._proc.exit_signal is None:
            return None
        code: int | None = self._proc.returncode
        return code if code is not None else -1

    def read(self, size: int = 65536) -> bytes:
        try:
            data: bytes = _run(self._proc.stdout.read(size), None)
        except Exception:
            return b""
        return data

    def write(self, data: bytes) -> None:
        async def put() -> None:
            self._proc.stdin.write(data)
            await self._proc.stdin.drain()

        try:
            _run(put(), 60)
        except Exception as exc:
            raise BrokenPipeError(f"the process's input is closed ({exc})") from None

    def close_stdin(self) -> None:
        if self.pty:
            self.write(b"\x04")
            return
        with contextlib.suppress(Exception):
            _run(_eof(self._proc), 30)

    def wait(self, timeout: float | None = None) -> bool:
        try:
            _run(self._proc.wait_closed(), timeout)
        except TimeoutError:
            return False
        except Exception:
            return True
        return True

    def terminate(self, grace: float = 2.0) -> str:
        if self.returncode is not None:
            return "already exited"
        pid = self.remote_pid
        conn = self._env._conn
        if pid is None or conn is None:
            self._proc.close()
            return "killed (its channel)"
        note: str = _run(self._env._end(conn, pid, grace), grace + 30)
        self.wait(5)
        return note

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.returncode is None:
            with contextlib.suppress(Exception):
                self.terminate(0.5)
        with contextlib.suppress(Exception):
            self._proc.close()
        for path in (self._control_file, self._state_file):
            if path:
                with contextlib.suppress(Exception):
                    _run(self._env.files._sftp.remove(path), 15)
        self._env._forget(self)


async def _eof(proc: Any) -> None:
    proc.stdin.write_eof()
