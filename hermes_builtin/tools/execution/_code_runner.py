"""The warm interpreter of an ``execute_code`` session: a Python that lives inside the walls and forks one child per
script (run by file path in the sandbox, ``python -I -S -B _code_runner.py <control fd>``; stdlib only).

Requests come over a Unix socket inherited from the host (its descriptor number is the argument), one JSON line
each, with the script's end of the tool bridge attached (``SCM_RIGHTS``). For each, the runner forks a shepherd
with a session of its own, which forks the script's process: fresh pipes for stdout and stderr, the bridge's end
at the descriptor number its ``hermes_tools`` module expects, the run's limits as rlimits (memory, CPU time,
file size), the workspace as its directory, then the bootstrap (``_code_sandbox.BOOTSTRAP``) of the run's
folder. A fork of an interpreter that has started already costs a millisecond, where a new sandbox and a new
Python cost ten or more. The runner keeps the head and tail of each stream and ends the run as the sandbox would
end a call: at the deadline (SIGTERM to the run's session, a grace period, SIGKILL), when more processes than
allowed run at once, and when the script's own process exits, every process left in the sandbox's PID namespace
but the runner is killed, so nothing outlives its run. A script that signals its parent reaches the shepherd,
never the runner. The reply is one JSON line back over the socket.

Only for a backend with a PID namespace of its own (bwrap): the namespace holds the runner and the runs, and
nothing else, so "every process but the runner" means the run's.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import selectors
import signal
import socket
import sys
import time
from typing import Any

_POLL = 0.02


class _HeadTail:
    """The first ``head`` and last ``tail`` bytes of a stream, the middle only counted."""

    def __init__(self, size: int) -> None:
        self.head_limit = size * 2 // 5
        self.tail_limit = size - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_limit > 0:
            self.tail += data
            if len(self.tail) > 2 * self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def result(self) -> tuple[str, int]:
        tail = bytes(self.tail[-self.tail_limit :]) if self.tail_limit > 0 else b""
        omitted = max(0, self.total - len(self.head) - len(tail))
        head = bytes(self.head).decode("utf-8", "replace")
        if not omitted:
            return head + tail.decode("utf-8", "replace"), 0
        marker = f"\n[... {omitted} bytes of output omitted ...]\n"
        return head + marker + tail.decode("utf-8", "replace"), omitted


def _others() -> list[int]:
    """Every process of this PID namespace but its init (1) and the runner."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            pid = int(name)
            if pid not in (1, me):
                found.append(pid)
    return found


def _kill_others() -> bool:
    """SIGKILL everything but the runner, until nothing is left; True when something was."""
    killed = False
    for _ in range(100):
        pids = _others()
        if not pids:
            break
        killed = True
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap()
        time.sleep(0.005)
    return killed


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _child(request: dict[str, Any], bridge: int, out_w: int, err_w: int) -> None:
    """In the script's process: the run's pipes, bridge, limits and directory, then the bootstrap."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        wanted = int(request["bridge_fd"])  # where the generated hermes_tools module looks for it
        if bridge >= 0 and bridge != wanted:
            os.dup2(bridge, wanted)
        if bridge >= 0:
            os.set_inheritable(wanted, True)
        os.closerange(3, wanted)
        os.closerange(wanted + 1, 1 << 16)
        for which, value in request.get("rlimits", []):
            hard = value + 1 if which == resource.RLIMIT_CPU else value
            resource.setrlimit(which, (value, hard))
        os.chdir(request["cwd"])
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        boot = request["boot"]
        sys.argv = [boot]
        with open(boot, encoding="utf-8") as fh:
            source = fh.read()
        exec(compile(source, boot, "exec"), {"__name__": "_hermes_boot", "__file__": boot})
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if stop.code is not None and not isinstance(stop.code, int):
            print(stop.code, file=sys.stderr)
    except BaseException:  # the bootstrap prints the script's own errors; this is the runner's
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _shepherd(request: dict[str, Any], bridge: int, out_w: int, err_w: int, status_w: int) -> None:
    """The script's parent: a session of its own for the run, the script forked, its pid and then its exit
    status told to the runner. A script that signals its parent reaches this process, never the runner."""
    try:
        os.setsid()
        pid = os.fork()
        if pid == 0:
            os.close(status_w)
            _child(request, bridge, out_w, err_w)
        os.close(out_w)
        os.close(err_w)
        if bridge >= 0:
            os.close(bridge)
        os.write(status_w, f"pid {pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        os.write(status_w, f"exit {status}\n".encode())
    finally:
        os._exit(0)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _run(request: dict[str, Any], bridge: int) -> dict[str, Any]:
    started = time.monotonic()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    status_r, status_w = os.pipe()
    shepherd = os.fork()
    if shepherd == 0:
        os.close(out_r)
        os.close(err_r)
        os.close(status_r)
        _shepherd(request, bridge, out_w, err_w, status_w)
    for fd in (out_w, err_w, status_w):
        os.close(fd)
    if bridge >= 0:
        os.close(bridge)  # the script holds it now
    sinks = {out_r: _HeadTail(int(request["stdout_cap"])), err_r: _HeadTail(int(request["stderr_cap"]))}
    told = bytearray()
    selector = selectors.DefaultSelector()
    for fd in (out_r, err_r, status_r):
        selector.register(fd, selectors.EVENT_READ)
    deadline = started + float(request["timeout"])
    grace = float(request.get("grace", 1.0))
    max_processes = int(request.get("max_processes") or 0)
    script = 0  # the script's pid, once the shepherd told it
    status: int | None = None  # its wait status; -1: ended by the runner (deadline, limit) or status unknown
    timed_out = too_many = leftovers = cleaned = False
    kill_note = ""
    open_fds = {out_r, err_r, status_r}
    while True:
        for key, _ in selector.select(_POLL if status is None else 0.05):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                selector.unregister(key.fd)
                open_fds.discard(key.fd)
                os.close(key.fd)
            elif key.fd == status_r:
                told += chunk
            else:
                sinks[key.fd].write(chunk)
        for line in bytes(told).splitlines():
            word, _, value = line.partition(b" ")
            if word == b"pid":
                script = int(value)
            elif word == b"exit" and status is None:
                status = int(value)
        if status is None:
            if script and status_r not in open_fds and not _alive(script):
                status = -1  # the script killed its shepherd before it could tell: ended, status unknown
            elif time.monotonic() >= deadline:
                timed_out = True
                kill_note = _terminate(shepherd, script, grace)
                status = -1
            elif max_processes and len(_others()) > max_processes + 1:  # + the shepherd
                too_many = True
                _kill_others()
                status = -1
        if status is not None and not cleaned:
            cleaned = True
            if not (timed_out or too_many):
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(shepherd, 0)  # it ends right after telling (or is gone already)
            killed = _kill_others()  # what the script left running (it may hold the pipes open)
            leftovers = killed and not (timed_out or too_many)
        if status is not None and not (open_fds - {status_r}):
            break
        if status is not None and time.monotonic() > max(deadline, started) + grace + 2:
            break  # a pipe held open by something that would not die: stop reading
    for fd in open_fds:
        os.close(fd)
    selector.close()
    _kill_others()
    _reap()
    stdout, stdout_omitted = sinks[out_r].result()
    stderr, stderr_omitted = sinks[err_r].result()
    ended = timed_out or too_many or status is None or status == -1
    return {
        "exit_code": None if ended else os.waitstatus_to_exitcode(status or 0),
        "stdout": stdout,
        "stderr": stderr,
        "stdout_omitted": stdout_omitted,
        "stderr_omitted": stderr_omitted,
        "timed_out": timed_out,
        "too_many_processes": too_many,
        "leftovers_killed": leftovers,
        "kill_note": kill_note,
        "duration": time.monotonic() - started,
    }


def _terminate(shepherd: int, script: int, grace: float) -> str:
    """SIGTERM to the run's session, ``grace`` seconds for the script to end, then SIGKILL to everything."""
    try:
        os.killpg(shepherd, signal.SIGTERM)
    except ProcessLookupError:
        return "killed"
    end = time.monotonic() + grace
    while time.monotonic() < end:
        if script and not _alive(script):
            _kill_others()
            return "terminated"
        time.sleep(0.01)
    _kill_others()
    return "killed"


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pending = b""
    while True:
        fds: list[int] = []
        while b"\n" not in pending:
            data, got, _, _ = socket.recv_fds(control, 1 << 16, 4)
            if not data:
                return  # the host went away: so does the runner
            pending += data
            fds += got
        line, _, pending = pending.partition(b"\n")
        request = json.loads(line)
        bridge = fds[0] if fds else -1
        for extra in fds[1:]:
            os.close(extra)
        reply = _run(request, bridge)
        control.sendall(json.dumps(reply).encode("utf-8") + b"\n")


if __name__ == "__main__":
    main()
