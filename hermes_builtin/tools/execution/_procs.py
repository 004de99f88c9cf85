"""Background processes of the terminal tools: each runs in the sandbox, its output spooled to disk.

A ``ProcessTable`` belongs to one tool system (kept in its stash, so ``system.close()`` ends every process
still running); each ``BackgroundProcess`` wraps a ``SandboxProcess`` whose whole tree ends on ``kill``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core.sandbox import SandboxProcess

__all__ = ["BackgroundProcess", "ProcessTable"]

_numbers = itertools.count(1)  # process ids are unique in the process, whichever session's table holds them


class _Spool:
    """Writes a process's output to ``<base>.log``, rotating to ``<base>.log.1`` to cap disk use."""

    def __init__(self, base: Path, cap_bytes: int) -> None:
        self.path = base.with_suffix(".log")
        self.old = base.with_suffix(".log.1")
        self._segment = max(4096, cap_bytes // 2)
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self._size = 0
        self.discarded = 0
        self.lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self.lock:
            if self._size + len(data) > self._segment and self._size:
                self._file.close()
                if self.old.exists():
                    self.discarded += self.old.stat().st_size
                os.replace(self.path, self.old)
                self._file = open(self.path, "wb")  # noqa: SIM115
                self._size = 0
            self._file.write(data)
            self._file.flush()
            self._size += len(data)

    def close(self) -> None:
        with self.lock:
            self._file.close()

    def read(self) -> bytes:
        with self.lock:
            parts = [p.read_bytes() for p in (self.old, self.path) if p.exists()]
        return b"".join(parts)


class BackgroundProcess:
    """A command started with ``background=true``: its sandboxed process, spooled output and bookkeeping."""

    def __init__(self, pid_key: str, command: str, cwd: Path, proc: SandboxProcess, spool: _Spool) -> None:
        self.id = pid_key
        self.command = command
        self.cwd = cwd
        self.proc = proc
        self.spool = spool
        self.started = time.time()
        self.ended: float | None = None
        self.killed = ""
        self._reader = threading.Thread(target=self._pump, daemon=True, name=f"hermes-{pid_key}")
        self._reader.start()
        self._watcher = threading.Thread(target=self._watch, daemon=True, name=f"hermes-{pid_key}-wait")
        self._watcher.start()

    def _pump(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        read = getattr(stream, "read1", stream.read)
        try:
            while True:
                chunk = read(65536)
                if not chunk:
                    break
                self.spool.write(chunk)
        except (OSError, ValueError):
            pass
        finally:
            self.spool.close()
            with contextlib.suppress(OSError):
                stream.close()

    def _watch(self) -> None:
        """When the command exits, what it left running ends with it (as in the foreground)."""
        self.proc.wait()
        if self.ended is None:
            self.ended = time.time()
        if not self.killed:
            self.proc.end_leftovers()
        self._reader.join(5.0)
        self.proc.release()

    @property
    def running(self) -> bool:
        return self.proc.running

    def wait(self, timeout: float) -> bool:
        """Wait for the command to exit and its output to be drained; True when it finished."""
        if not self.proc.wait(timeout):
            return False
        self._reader.join(max(0.5, min(timeout, 2.0)))
        return True

    def kill(self) -> str:
        """End the command and every process it started; returns what it did."""
        what = self.proc.terminate()
        if what != "already exited":
            self.killed = what
        self._reader.join(1.0)
        self.proc.release()
        return what

    def status(self) -> dict[str, Any]:
        code = self.proc.poll()
        end = self.ended if self.ended is not None else time.time()
        info: dict[str, Any] = {
            "id": self.id,
            "command": self.command if len(self.command) <= 200 else self.command[:200] + "...",
            "pid": self.proc.pid,
            "status": "running" if code is None else ("killed" if self.killed else "exited"),
            "runtime_s": round(end - self.started, 2),
        }
        if code is not None:
            info["exit_code"] = code
        return info


class ProcessTable:
    """The background processes of one tool system."""

    def __init__(self, spool_dir: Path, *, log_cap_bytes: int = 8 * 1024 * 1024) -> None:
        self.spool_dir = spool_dir
        self.log_cap_bytes = log_cap_bytes
        self._procs: dict[str, BackgroundProcess] = {}
        self._lock = threading.Lock()

    def add(self, command: str, cwd: Path, start: Any) -> BackgroundProcess:
        """Start a process with ``start(stdout=...)`` (it returns a ``SandboxProcess``) and track it."""
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            key = f"proc_{os.getpid():x}_{next(_numbers)}"
        spool = _Spool(self.spool_dir / key, self.log_cap_bytes)
        try:
            proc = start()
        except BaseException:
            spool.close()
            raise
        bg = BackgroundProcess(key, command, cwd, proc, spool)
        with self._lock:
            self._procs[key] = bg
        return bg

    def get(self, key: str) -> BackgroundProcess | None:
        return self._procs.get(key)

    def all(self) -> list[BackgroundProcess]:
        with self._lock:
            return list(self._procs.values())

    def close(self) -> None:
        """End every background process still running (and its whole tree)."""
        for bg in self.all():
            with contextlib.suppress(Exception):
                bg.kill()
