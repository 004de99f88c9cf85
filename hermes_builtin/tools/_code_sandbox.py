"""The child process of ``execute_code``: a bootstrap that applies limits, then runs the script.

The child is ``python -I -B -X utf8 <dir>/_hermes_boot.py <limits>``. Isolated mode ignores ``PYTHON*``
variables and the user site, and leaves the script's directory off ``sys.path``, so the bootstrap puts
the private directory (with the generated ``hermes_tools`` module) first and the workspace last. It sets
each resource limit as soft and hard limit (so the script cannot raise it again, unless it runs as root),
flushes the script's output when it is sent SIGTERM, and prints tracebacks without its own frame.

The parent runs the child in a new session (process group) with stdout and stderr drained by threads
into head+tail buffers, watches the group's size, and kills the whole group on timeout, when it grows
past the process limit, or when children outlive the script.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ._procs import HeadTail, _drain, _group_alive, group_size, kill_group

__all__ = [
    "BOOTSTRAP",
    "BOOT_NAME",
    "SCRIPT_NAME",
    "Limits",
    "ScriptRun",
    "group_size",
    "rlimits",
    "run_script",
]

BOOT_NAME = "_hermes_boot.py"
SCRIPT_NAME = "script.py"
_POLL = 0.1

BOOTSTRAP = r'''"""Bootstrap of an execute_code child: limits, paths, then the script (see hermes_builtin)."""
import json
import os
import resource
import signal
import sys

_PID = os.getpid()


def _on_term(signum, frame):
    if os.getpid() == _PID:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
    os._exit(128 + signum)


def _apply(limits):
    for name, value in limits.items():
        which = getattr(resource, name, None)
        if which is None:
            continue
        _, cur_hard = resource.getrlimit(which)
        hard = value if cur_hard == resource.RLIM_INFINITY else min(value, cur_hard)
        try:
            resource.setrlimit(which, (hard, hard))
        except (ValueError, OSError) as exc:
            sys.stderr.write(f"sandbox: could not set {name}: {exc}\n")
            sys.exit(125)


def _main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "script.py"), encoding="utf-8") as fh:
        source = fh.read()
    signal.signal(signal.SIGTERM, _on_term)
    _apply(json.loads(sys.argv[1]))
    sys.path.insert(0, here)
    sys.path.append(os.getcwd())
    sys.argv = ["<script>"]
    import linecache
    import traceback
    import types

    linecache.cache["<script>"] = (len(source), None, source.splitlines(True), "<script>")
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    try:
        exec(compile(source, "<script>", "exec", dont_inherit=True), main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        tb = exc.__traceback__
        traceback.print_exception(type(exc), exc, tb.tb_next if tb is not None else None)
        sys.exit(1)


_main()
'''


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits of one script run. ``max_processes`` counts the processes of the script's group."""

    timeout: float
    memory_mb: int
    max_processes: int
    file_mb: int


@dataclass(slots=True)
class ScriptRun:
    """What the child did. ``exit_code`` is None when it was killed by the parent."""

    exit_code: int | None
    stdout: str
    stderr: str
    stdout_omitted: int
    stderr_omitted: int
    timed_out: bool
    too_many_processes: bool
    leftovers_killed: bool
    kill_note: str
    duration: float


def _user_tasks() -> int:
    """Tasks (threads included) of this real uid, as RLIMIT_NPROC counts them; 0 when unknown."""
    uid = str(os.getuid()).encode()
    total = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as fh:
                status = fh.read()
        except OSError:
            continue
        owner = threads = None
        for line in status.splitlines():
            if line.startswith(b"Uid:"):
                owner = line.split()[1]
            elif line.startswith(b"Threads:"):
                threads = int(line.split()[1])
        if owner == uid:
            total += threads or 1
    return total


def rlimits(limits: Limits) -> dict[str, int]:
    """The resource limits the bootstrap applies (soft = hard), by ``resource`` constant name."""
    mib = 1024 * 1024
    cpu = int(limits.timeout) + 5
    out = {
        "RLIMIT_DATA": limits.memory_mb * mib,
        "RLIMIT_AS": max(limits.memory_mb * 4, limits.memory_mb + 2048) * mib,
        "RLIMIT_CPU": cpu,
        "RLIMIT_FSIZE": limits.file_mb * mib,
        "RLIMIT_CORE": 0,
    }
    # RLIMIT_NPROC counts every task of the user (and root ignores it); the group watcher is the real bound.
    if os.getuid() != 0:
        busy = _user_tasks()
        if busy:
            out["RLIMIT_NPROC"] = busy + 2 * limits.max_processes + 16
    return out


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux 5.3+), so waiting wakes at once."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd


def _wait_exit(proc: subprocess.Popen[bytes], pidfd: int | None, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for the child to exit (and reap it); True when it has."""
    if pidfd is None:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    import select

    select.select([pidfd], [], [], timeout)
    return proc.poll() is not None


def run_script(
    directory: Path,
    *,
    cwd: Path,
    env: dict[str, str],
    limits: Limits,
    stdout_cap: int,
    stderr_cap: int,
) -> ScriptRun:
    """Run ``directory/script.py`` through the bootstrap in ``directory``; never leaves processes behind."""
    boot = directory / BOOT_NAME
    boot.write_text(BOOTSTRAP, encoding="utf-8")
    argv = [sys.executable, "-I", "-B", "-X", "utf8", str(boot), json.dumps(rlimits(limits))]
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=str(cwd),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out = HeadTail(stdout_cap // 2, stdout_cap - stdout_cap // 2)
    err = HeadTail(stderr_cap // 2, stderr_cap - stderr_cap // 2)
    readers = [
        threading.Thread(target=_drain, args=(stream, sink), daemon=True, name="hermes-code-drain")
        for stream, sink in ((proc.stdout, out), (proc.stderr, err))
    ]
    for reader in readers:
        reader.start()
    timed_out = too_many = False
    kill_note = ""
    pidfd = _pidfd(proc.pid)
    deadline = start + limits.timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                kill_note = kill_group(proc.pid, proc, grace=1.0)
                break
            if _wait_exit(proc, pidfd, min(_POLL, remaining)):
                break
            if limits.max_processes and (group_size(proc.pid) or 0) > limits.max_processes:
                too_many = True
                kill_note = kill_group(proc.pid, proc, grace=0.2)
                break
    except BaseException:
        kill_group(proc.pid, proc, grace=0.0)
        raise
    finally:
        # Children that outlive the script keep the pipes open: give them a moment, then end the group.
        for reader in readers:
            reader.join(0.25)
        leftovers = _group_alive(proc.pid)
        if leftovers or any(r.is_alive() for r in readers):
            kill_group(proc.pid, None, grace=0.5)
            for reader in readers:
                reader.join(2.0)
        for stream in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()
        if pidfd is not None:
            os.close(pidfd)
    killed = timed_out or too_many
    return ScriptRun(
        exit_code=None if killed else proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        stdout_omitted=out.omitted,
        stderr_omitted=err.omitted,
        timed_out=timed_out,
        too_many_processes=too_many,
        leftovers_killed=leftovers and not killed,
        kill_note=kill_note,
        duration=time.monotonic() - start,
    )
