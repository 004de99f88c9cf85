"""Background processes of the terminal tools: each runs in the session's environment, its output spooled to disk.

A ``ProcessTable`` belongs to one session (kept in its stash, so closing the session, an MCP client leaving or
``system.close()`` ends every process still running); each ``BackgroundProcess`` wraps an environment
``Process`` whose whole tree ends on ``kill``. Output is read by a thread into a spool file (capped, rotated);
``take_new`` returns what was printed since the last read. ``notify_on_complete`` and ``watch_patterns``
post to the session's notifications (``Session.notify``); a watched line also wakes a ``wait``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core.environments import Process

__all__ = ["BackgroundProcess", "ProcessTable", "Watch", "clean_output"]

MAX_WATCH_LINE = 4000
_WATCH_TIMEOUT = 0.05
_MAX_NOTES = 20


def clean_output(text: str) -> str:
    """Terminal output as the model should read it: escape sequences stripped, ``\\r\\n`` as ``\\n``, and a line
    rewritten in place with ``\\r`` (a progress bar) kept as its last state."""
    from hermes_core.sandbox import strip_ansi

    text = strip_ansi(text).replace("\r\n", "\n")
    if "\r" not in text:
        return text
    return "\n".join(
        line.rsplit("\r", 1)[-1] if "\r" in line.rstrip("\r") else line.rstrip("\r")
        for line in text.split("\n")
    )


class Watch:
    """Regular expressions (``regex``, with a time limit per line) watched in a process's output."""

    def __init__(self, patterns: Sequence[str]) -> None:
        import regex  # type: ignore[import-untyped]

        self.sources = list(patterns)
        self.compiled = [regex.compile(p) for p in patterns]
        self.disabled: list[str] = []

    def first_match(self, line: str) -> str | None:
        """The first pattern found in ``line`` (a pattern that takes too long is switched off), or None."""
        line = line[:MAX_WATCH_LINE]
        for source, pattern in zip(self.sources, self.compiled, strict=True):
            if source in self.disabled:
                continue
            try:
                if pattern.search(line, timeout=_WATCH_TIMEOUT) is not None:
                    return source
            except TimeoutError:
                self.disabled.append(source)
        return None


class _Spool:
    """Writes a process's output to ``<base>.log``, rotating to ``<base>.log.1`` to cap disk use."""

    def __init__(self, base: Path, cap_bytes: int) -> None:
        self.path = base.with_suffix(".log")
        self.old = base.with_suffix(".log.1")
        self._segment = max(4096, cap_bytes // 2)
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self._size = 0
        self.discarded = 0
        self.total = 0
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
            self.total += len(data)

    def close(self) -> None:
        with self.lock:
            self._file.close()

    def read(self) -> tuple[bytes, int]:
        """What is kept, and the offset of its first byte in everything ever written."""
        with self.lock:
            parts = [p.read_bytes() for p in (self.old, self.path) if p.exists()]
            total = self.total
        data = b"".join(parts)
        return data, total - len(data)


class BackgroundProcess:
    """A command started with ``background=true``: its environment process, spooled output and bookkeeping."""

    def __init__(
        self,
        key: str,
        command: str,
        cwd: str,
        proc: Process,
        spool: _Spool,
        *,
        notify: Callable[[str], None] | None = None,
        notify_on_complete: bool = False,
        watch: Watch | None = None,
    ) -> None:
        self.id = key
        self.command = command
        self.cwd = cwd
        self.proc = proc
        self.spool = spool
        self.started = time.time()
        self.ended: float | None = None
        self.killed = ""
        self.read_mark = 0
        self.matches: list[str] = []
        self._notify = notify
        self._notify_on_complete = notify_on_complete
        self._watch = watch
        self._notes = 0
        self._woken = threading.Condition()
        self._partial = b""
        self._reader = threading.Thread(target=self._pump, daemon=True, name=f"hermes-{key}")
        self._reader.start()
        self._watcher = threading.Thread(target=self._wait_exit, daemon=True, name=f"hermes-{key}-wait")
        self._watcher.start()

    # -- threads -----------------------------------------------------------------------------------------

    def _pump(self) -> None:
        try:
            while True:
                chunk = self.proc.read(65536)
                if not chunk:
                    break
                self.spool.write(chunk)
                if self._watch is not None:
                    self._scan(chunk)
        except (OSError, ValueError):
            pass
        finally:
            if self._watch is not None and self._partial:
                self._scan(b"\n")
            self.spool.close()

    def _scan(self, chunk: bytes) -> None:
        assert self._watch is not None
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()[-MAX_WATCH_LINE:]
        for raw in lines:
            line = clean_output(raw.decode("utf-8", "replace")).strip("\n")
            pattern = self._watch.first_match(line)
            if pattern is None:
                continue
            with self._woken:
                self.matches.append(line)
                self._woken.notify_all()
            self._post(f"[process {self.id}: output matched {pattern!r}] {line[:500]}")

    def _wait_exit(self) -> None:
        """When the command exits, what it left running ends with it; then the output is drained."""
        self.proc.wait()
        if self.ended is None:
            self.ended = time.time()
        self._reader.join(5.0)
        self.proc.close()
        with self._woken:
            self._woken.notify_all()
        if self._notify_on_complete:
            status = self.status()
            tail = clean_output(self.spool.read()[0][-2000:].decode("utf-8", "replace")).strip()
            code = f"exit code {status.get('exit_code')}" if not self.killed else "killed"
            self._post(
                f"[process {self.id} finished ({code}, {status['runtime_s']}s): {status['command']}]"
                + (f"\n{tail}" if tail else "")
            )

    def _post(self, message: str) -> None:
        if self._notify is None or self._notes >= _MAX_NOTES:
            return
        self._notes += 1
        if self._notes == _MAX_NOTES:
            message += f"\n[further notifications of {self.id} are dropped; use process poll]"
        with contextlib.suppress(Exception):
            self._notify(message)

    # -- what the tool asks ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.proc.running

    def wait(self, timeout: float, *, wake_on_match: bool = False) -> str:
        """Wait for the command to exit (and its output to drain), or with ``wake_on_match`` for a watched line;
        returns "exited", "matched" or "timeout"."""
        deadline = time.monotonic() + timeout
        seen = len(self.matches)
        with self._woken:
            while True:
                if not self._watcher.is_alive() and not self.proc.running:
                    return "exited"
                if wake_on_match and len(self.matches) > seen:
                    return "matched"
                left = deadline - time.monotonic()
                if left <= 0:
                    return "timeout"
                self._woken.wait(min(left, 0.25))

    def take_new(self) -> tuple[str, int]:
        """The output printed since the last read (cleaned), and how many of its bytes were already rotated away."""
        data, start = self.spool.read()
        mark = self.read_mark
        lost = max(0, start - mark)
        new = data[max(0, mark - start) :]
        self.read_mark = start + len(data)
        return clean_output(new.decode("utf-8", "replace")), lost

    def write(self, data: bytes) -> None:
        self.proc.write(data)

    def close_stdin(self) -> None:
        self.proc.close_stdin()

    def kill(self) -> str:
        """End the command and every process it started; returns what it did."""
        what = self.proc.terminate()
        if what != "already exited":
            self.killed = what
        self._reader.join(1.0)
        self._watcher.join(2.0)
        return what

    def status(self) -> dict[str, Any]:
        code = self.proc.returncode
        end = self.ended if self.ended is not None else time.time()
        info: dict[str, Any] = {
            "id": self.id,
            "command": self.command if len(self.command) <= 200 else self.command[:200] + "...",
            "pid": self.proc.pid,
            "pty": self.proc.pty,
            "status": "running" if code is None else ("killed" if self.killed else "exited"),
            "runtime_s": round(end - self.started, 2),
        }
        if code is not None:
            info["exit_code"] = code
        if self._watch is not None:
            info["watch_matches"] = len(self.matches)
            if self._watch.disabled:
                info["watch_disabled"] = list(self._watch.disabled)
        return info


class ProcessTable:
    """The background processes of one session."""

    def __init__(self, spool_dir: Path, *, log_cap_bytes: int = 8 * 1024 * 1024) -> None:
        self.spool_dir = spool_dir
        self.log_cap_bytes = log_cap_bytes
        self._procs: dict[str, BackgroundProcess] = {}
        self._lock = threading.Lock()
        self._counter = itertools.count(1)

    def add(
        self,
        command: str,
        cwd: str,
        start: Callable[[], Process],
        *,
        notify: Callable[[str], None] | None = None,
        notify_on_complete: bool = False,
        watch: Watch | None = None,
    ) -> BackgroundProcess:
        """Start a process with ``start()`` (an environment ``Process``) and track it."""
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            key = f"proc_{os.getpid():x}_{next(self._counter)}"
        spool = _Spool(self.spool_dir / key, self.log_cap_bytes)
        try:
            proc = start()
        except BaseException:
            spool.close()
            raise
        bg = BackgroundProcess(
            key, command, cwd, proc, spool, notify=notify, notify_on_complete=notify_on_complete, watch=watch
        )
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
