"""Shell processes for the terminal tools: scrubbed environments, capped output, process groups.

Foreground commands run in their own session (process group) with their output drained by a thread into
a head+tail buffer, so a flood can neither exhaust memory nor block the child. Background processes are
tracked per tool system in a ``ProcessTable`` and spool their output to files, capped on disk.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = [
    "BackgroundProcess",
    "HeadTail",
    "ProcessTable",
    "RunResult",
    "close_processes",
    "kill_group",
    "run_foreground",
    "scrub_env",
    "shell_argv",
    "table_for",
]

_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "PRIVATE", "COOKIE")
_SECRET_PREFIXES = (
    "AWS_",
    "AZURE_",
    "GOOGLE_",
    "GCP_",
    "OPENAI_",
    "ANTHROPIC_",
    "GEMINI_",
    "MISTRAL_",
    "GROQ_",
    "COHERE_",
    "HF_",
    "HUGGINGFACE",
    "OPENROUTER_",
    "GITHUB_",
    "GH_",
    "GITLAB_",
    "SLACK_",
    "DISCORD_",
    "TELEGRAM_",
    "STRIPE_",
    "TWILIO_",
    "DATABASE_URL",
    "REDIS_URL",
    "NPM_",
    "PYPI_",
    "TWINE_",
    "DOCKER_",
    "HERMES_",
)
_KEEP = frozenset({"HERMES_HOME"})
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_TERM_GRACE = 2.0


def is_secret_name(name: str) -> bool:
    """True for environment variable names that look like they hold credentials."""
    upper = name.upper()
    if upper in _KEEP:
        return False
    return any(word in upper for word in _SECRET_WORDS) or upper.startswith(_SECRET_PREFIXES)


def scrub_env(base: Mapping[str, str], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` without secret-looking variables, with non-interactive defaults and ``extra`` on top."""
    env = {k: v for k, v in base.items() if not is_secret_name(k)}
    env.setdefault("PAGER", "cat")
    env.setdefault("GIT_PAGER", "cat")
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.setdefault("TERM", "dumb")
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    return env


def shell_argv(
    command: str, *, max_memory_mb: int | None = None, max_processes: int | None = None
) -> list[str]:
    """The argv that runs ``command`` with bash, applying soft resource limits when given.

    Limits are set by a tiny wrapper shell that then ``exec``s a fresh ``bash -c command`` (same pid,
    same process group), so the command text itself is never rewritten.
    """
    limits = []
    if max_memory_mb:
        limits.append(f"ulimit -S -d {int(max_memory_mb) * 1024} 2>/dev/null")
    if max_processes:
        limits.append(f"ulimit -S -u {int(max_processes)} 2>/dev/null")
    if not limits:
        return ["bash", "-c", command]
    return ["bash", "-c", "; ".join(limits) + '; exec bash -c "$1"', "bash", command]


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


class HeadTail:
    """Keeps the first ``head`` and the last ``tail`` bytes written, counting what falls in between."""

    def __init__(self, head: int, tail: int) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self._tail_limit > 0:
            self.tail += data
            if len(self.tail) > 2 * self._tail_limit:
                del self.tail[: len(self.tail) - self._tail_limit]

    @property
    def omitted(self) -> int:
        return max(0, self.total - len(self.head) - min(len(self.tail), self._tail_limit))

    def text(self) -> str:
        tail = bytes(self.tail[-self._tail_limit :]) if self._tail_limit > 0 else b""
        head = bytes(self.head).decode("utf-8", "replace")
        if not self.omitted:
            return strip_ansi(head + tail.decode("utf-8", "replace"))
        tail_text = tail.decode("utf-8", "replace")
        marker = f"\n[... {self.omitted} bytes of output omitted ...]\n"
        return strip_ansi(head + marker + tail_text)


def _drain(stream: IO[bytes], sink: HeadTail) -> None:
    read = getattr(stream, "read1", stream.read)
    try:
        while True:
            chunk = read(65536)
            if not chunk:
                return
            sink.write(chunk)
    except (OSError, ValueError):
        return


def group_size(pgid: int) -> int | None:
    """Processes (zombies excepted) whose process group is ``pgid``, from /proc; None when /proc is unavailable."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    key = str(pgid).encode()
    count = 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[2] == key and fields[0] not in (b"Z", b"X"):
            count += 1
    return count


def _live_members(pgid: int) -> bool | None:
    """Whether the group has a member that is not a zombie (None when /proc is unavailable)."""
    size = group_size(pgid)
    return None if size is None else size > 0


def _group_alive(pgid: int) -> bool:
    """True while some process of the group is still running (zombies awaiting a reaper don't count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    live = _live_members(pgid)
    return True if live is None else live


def kill_group(pgid: int, proc: subprocess.Popen[bytes] | None = None, grace: float = _TERM_GRACE) -> str:
    """SIGTERM the process group, wait up to ``grace`` seconds, then SIGKILL it; returns what it did."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        if proc is not None:
            with contextlib.suppress(Exception):
                proc.wait(0.5)
        return "already exited"
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None:
            proc.poll()
            leader_done = proc.returncode is not None
        else:
            leader_done = True
        if leader_done and not _group_alive(pgid):
            return "terminated (SIGTERM)"
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    if proc is not None:
        with contextlib.suppress(Exception):
            proc.wait(2.0)
    return "killed (SIGTERM, then SIGKILL)"


@dataclass(slots=True)
class RunResult:
    """What a foreground command did."""

    output: str
    exit_code: int | None
    duration: float
    timed_out: bool
    omitted_bytes: int
    leftovers_killed: bool
    kill_note: str = ""


def run_foreground(
    argv: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float, max_output_bytes: int
) -> RunResult:
    """Run ``argv`` in a new session; on timeout (or when children outlive the shell) kill the group."""
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=str(cwd),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    sink = HeadTail(max_output_bytes * 2 // 5, max_output_bytes - max_output_bytes * 2 // 5)
    reader = threading.Thread(
        target=_drain, args=(proc.stdout, sink), daemon=True, name="hermes-terminal-drain"
    )
    reader.start()
    timed_out = False
    kill_note = ""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_note = kill_group(proc.pid, proc)
    except BaseException:
        kill_group(proc.pid, proc, grace=0.2)
        raise
    # Children that outlive the shell keep the pipe open; give them a moment, then end the group.
    reader.join(0.25)
    leftovers = False
    if reader.is_alive() or _group_alive(proc.pid):
        leftovers = _group_alive(proc.pid)
        kill_group(proc.pid, None, grace=0.5)
        reader.join(2.0)
    with contextlib.suppress(OSError):
        proc.stdout.close()
    return RunResult(
        output=sink.text(),
        exit_code=None if timed_out else proc.returncode,
        duration=time.monotonic() - start,
        timed_out=timed_out,
        omitted_bytes=sink.omitted,
        leftovers_killed=leftovers and not timed_out,
        kill_note=kill_note,
    )


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
    """A command started with ``background=true``: its Popen, its spooled output and its bookkeeping."""

    def __init__(
        self, pid_key: str, command: str, cwd: Path, proc: subprocess.Popen[bytes], spool: _Spool
    ) -> None:
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
            self.proc.wait()
            if self.ended is None:
                self.ended = time.time()
            self.spool.close()
            with contextlib.suppress(OSError):
                stream.close()

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float) -> bool:
        """Wait for the shell to exit and its output to be drained; True when it finished."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        self._reader.join(max(0.5, min(timeout, 2.0)))
        return True

    def kill(self) -> str:
        if not self.running and not _group_alive(self.proc.pid):
            return "already exited"
        self.killed = kill_group(self.proc.pid, self.proc)
        self._reader.join(1.0)
        return self.killed

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
        self._counter = itertools.count(1)

    def start(self, argv: list[str], *, command: str, cwd: Path, env: Mapping[str, str]) -> BackgroundProcess:
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            key = f"proc_{os.getpid():x}_{next(self._counter)}"
        spool = _Spool(self.spool_dir / key, self.log_cap_bytes)
        try:
            proc = subprocess.Popen(
                argv,
                cwd=str(cwd),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
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
        """Kill the process group of every background process still running."""
        for bg in self.all():
            if bg.running or _group_alive(bg.proc.pid):
                with contextlib.suppress(Exception):
                    bg.kill()


_tables: weakref.WeakKeyDictionary[Any, ProcessTable] = weakref.WeakKeyDictionary()
_orphans: dict[int, ProcessTable] = {}
_tables_lock = threading.Lock()
_atexit_installed = False


def _close_all() -> None:
    with _tables_lock:
        tables = list(_tables.values()) + list(_orphans.values())
    for table in tables:
        table.close()


def table_for(system: Any, spool_dir: Path) -> ProcessTable:
    """The process table of ``system`` (``None`` means processes started without a tool system)."""
    global _atexit_installed
    with _tables_lock:
        if not _atexit_installed:
            import atexit

            atexit.register(_close_all)
            _atexit_installed = True
        if system is None:
            table = _orphans.get(0)
            if table is None:
                table = _orphans[0] = ProcessTable(spool_dir)
            return table
        try:
            table = _tables.get(system)
        except TypeError:  # not weak-referenceable or unhashable: key it by identity instead
            table = _orphans.get(id(system))
            if table is None:
                table = _orphans[id(system)] = ProcessTable(spool_dir)
            return table
        if table is None:
            table = ProcessTable(spool_dir)
            _tables[system] = table
            weakref.finalize(system, table.close)
            on_close = getattr(system, "on_close", None)
            if callable(on_close):
                on_close(table.close)
        return table


def close_processes(system: Any = None) -> None:
    """Kill every background process started through ``system`` (call it from ``ToolSystem.close()``)."""
    with _tables_lock:
        if system is None:
            table = _orphans.get(0)
        else:
            try:
                table = _tables.get(system)
            except TypeError:
                table = _orphans.get(id(system))
    if table is not None:
        table.close()
