"""A warm interpreter per ``execute_code`` session: one sandboxed Python that forks a child per script.

The first script of a session starts ``_code_runner`` in the session environment's sandbox, behind the same walls
a script gets (the workspace, the session's ``/tmp``, the network choice of ``execute_code``) and with the
session's limits on the whole tree (memory, processes, file size); each script after it is one request over a
Unix socket the runner inherited, with the script's end of the tool bridge attached. A run then costs a fork,
not a new sandbox and a new Python: where ``python -c`` takes ten milliseconds, the sandbox's launch chain
(cgroup, bwrap, prlimit) and a fresh interpreter took twice that, and on a loaded machine each of those processes
waits its turn.

What a run is promised stays the same (see ``_code_runner``): its own session and limits, the deadline, at most
``max_processes`` processes, and nothing left running after it. Used only by the local environment kind with
the bwrap backend (a PID namespace holding nothing but the session's runs) running the Python that runs hermes;
elsewhere, and when the runner is busy with another call of the same session, a script runs the cold way
(``_code_sandbox.run_script``). A runner that fails or is interrupted (a pipeline timeout) is ended with its
whole tree; the next script starts a new one.

Scripts of one session share the runner: a script could signal or trace it and so tamper with the later scripts
of the same conversation (never with anything outside the walls, nor with another session).
"""

from __future__ import annotations

import json
import resource
import secrets
import select
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._code_sandbox import BOOT_NAME, ScriptLimits, ScriptRun, lean, write_bootstrap

if TYPE_CHECKING:
    from hermes_core.environments import Environment

__all__ = ["STASH_KEY", "WarmRunner", "warm_runner"]

STASH_KEY = "execute_code.runner"
_RUNNER = Path(__file__).with_name("_code_runner.py")
_MARGIN = 5.0  # seconds past the run's own deadline before the runner is presumed stuck
_MIB = 1024 * 1024


def usable(environment: Environment) -> bool:
    """Whether ``environment`` can host a warm interpreter (see the module docstring)."""
    sandbox = getattr(environment, "sandbox", None)
    return environment.kind == "local" and getattr(sandbox, "backend", "") == "bwrap" and lean(environment)


class WarmRunner:
    """The runner of one session (see the module docstring); ``run()`` returns None when it cannot serve."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: Any = None
        self._control: socket.socket | None = None
        self._key: tuple[Any, ...] = ()
        self._buffer = b""

    def run(
        self,
        environment: Environment,
        directory: str,
        *,
        limits: ScriptLimits,
        stdout_cap: int,
        stderr_cap: int,
        bridge_fd: int,
    ) -> ScriptRun | None:
        """Run ``directory/script.py`` in the warm interpreter; None when it cannot (then run it the cold way)."""
        if not usable(environment) or not self._lock.acquire(blocking=False):
            return None
        try:
            key = (id(environment), limits.memory_mb, limits.max_processes, limits.file_mb)
            write_bootstrap(environment, directory)
            if self._proc is None or self._proc.poll() is not None or key != self._key:
                self._stop()
                self._start(environment, limits)
                self._key = key
            request = {
                "boot": f"{directory}/{BOOT_NAME}",
                "cwd": environment.workspace,
                "bridge_fd": bridge_fd,
                "timeout": limits.timeout,
                "grace": 1.0,
                "rlimits": _rlimits(limits),
                "max_processes": limits.max_processes,
                "stdout_cap": stdout_cap,
                "stderr_cap": stderr_cap,
            }
            try:
                reply = self._ask(request, bridge_fd, limits.timeout + 1.0 + _MARGIN)
            except BaseException:  # a pipeline timeout, a broken channel: the runner and its tree go
                self._stop()
                raise
            # files the host runs later (git hooks, a venv's .pth...) the script planted: undone now, as after a
            # call of its own (the read-only binds of those that existed hold already)
            self._proc.undo_host_run()
            if reply is None:  # the runner ended (the script ended it) or got stuck
                self._stop()
                return ScriptRun(-9, "", "", 0, 0, False, False, False, "", 0.0)
            return ScriptRun(
                exit_code=reply["exit_code"],
                stdout=reply["stdout"],
                stderr=reply["stderr"],
                stdout_omitted=reply["stdout_omitted"],
                stderr_omitted=reply["stderr_omitted"],
                timed_out=reply["timed_out"],
                too_many_processes=reply["too_many_processes"],
                leftovers_killed=reply["leftovers_killed"],
                kill_note=reply["kill_note"],
                duration=reply["duration"],
            )
        finally:
            self._lock.release()

    def _start(self, environment: Environment, limits: ScriptLimits) -> None:
        from hermes_core.sandbox import Limits

        runner = f"{environment.temp_dir.rstrip('/')}/hermes-runner-{secrets.token_hex(6)}.py"
        environment.write(runner, _RUNNER.read_bytes(), mode=0o600)  # the package may not be visible inside
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._proc = environment.sandbox.start(  # type: ignore[attr-defined]
                [environment.python, "-I", "-S", "-B", "-X", "utf8", runner, str(theirs.fileno())],
                limits=Limits(
                    memory_mb=limits.memory_mb,
                    # room above the run's limit (the runner counts and ends a run past it) for the runner, the
                    # namespace's init, a run's shepherd, and what a fork bomb starts before the next count
                    max_processes=2 * limits.max_processes + 3,
                    max_file_mb=limits.file_mb,
                ),
                tool="execute_code",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                background=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._control = ours
        self._buffer = b""

    def _ask(self, request: dict[str, Any], bridge_fd: int, wait: float) -> dict[str, Any] | None:
        control = self._control
        assert control is not None
        socket.send_fds(control, [json.dumps(request).encode("utf-8") + b"\n"], [bridge_fd])
        deadline = time.monotonic() + wait
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            # short waits: an interruption of this thread (the pipeline's timeout) lands between two of them
            ready, _, _ = select.select([control], [], [], min(left, 0.1))
            if not ready:
                continue
            chunk = control.recv(1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        control, self._control = self._control, None
        if control is not None:
            control.close()
        if proc is not None:
            try:
                proc.terminate(0)
            finally:
                proc.release()

    def close(self) -> None:
        """End the runner and everything it started (the session ends)."""
        with self._lock:
            self._stop()


def _rlimits(limits: ScriptLimits) -> list[tuple[int, int]]:
    """The rlimits of one run: what the sandbox gives a call's processes (no core files; data and address space
    from the memory limit; CPU time a little over the timeout; file size)."""
    out = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_CPU, int(limits.timeout) + 5)]
    if limits.memory_mb:
        out.append((resource.RLIMIT_DATA, limits.memory_mb * _MIB))
        out.append((resource.RLIMIT_AS, max(limits.memory_mb * 4, limits.memory_mb + 2048) * _MIB))
    if limits.file_mb:
        out.append((resource.RLIMIT_FSIZE, limits.file_mb * _MIB))
    return out


def warm_runner(context: Any) -> WarmRunner:
    """The session's runner (made on first use, ended with the session)."""
    runner: WarmRunner = context.session.stash(STASH_KEY, WarmRunner, WarmRunner.close)
    return runner
