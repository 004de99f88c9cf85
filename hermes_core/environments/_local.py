"""The ``local`` kind: this machine, behind the walls of ``hermes_core.sandbox``, one private ``/tmp`` per session.

Each session gets its own ``Sandbox`` whose ``/tmp`` is a private host folder (made when the session starts,
removed when it ends) shared by every tool of the session: commands see it as ``/tmp`` (bwrap binds it there;
Landlock names it in ``TMPDIR``), and the file tools open ``/tmp/...`` in it. The file tools' roots are the
sandbox's own view (``Layout``): the workspace and the configured ``read_write`` folders writable, ``/tmp``
writable, the system folders, toolchains and ``read_only`` folders read-only, hidden paths hidden, the host's own
code read-only even inside the workspace; plus the pipeline's saved results, read-only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import ConfigError
from ..errors import ToolError
from ._base import (
    CommandResult,
    EnvironmentSpec,
    EnvironmentStatus,
    EnvironmentUnavailable,
    PathOutsideRoots,
    Process,
)
from ._local_process import LocalProcess, open_pty
from ._rooted import Root, RootedFiles
from ._shell import DEFAULT_OPTIONS_COMMAND, ShellSession
from ._shell import argv as shell_argv
from ._through_files import FilesEnvironment

if TYPE_CHECKING:
    from ..sandbox import Layout, Limits, RunResult, Sandbox, SandboxSettings

__all__ = ["LocalEnvironment"]

_MAX_DUMP = 64 * 1024 * 1024


def _settings(spec: EnvironmentSpec) -> SandboxSettings:
    from ..sandbox import settings_from_config

    try:
        return settings_from_config(spec.config)
    except ConfigError as err:
        raise EnvironmentUnavailable(f"the [sandbox] configuration is invalid: {err}") from None


def _state_file(data: bytes) -> int:
    """A descriptor of an anonymous file holding ``data`` (inherited by the command; nothing on disk)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("hermes-shell", os.MFD_CLOEXEC)
    else:  # pragma: no cover - non-Linux hosts
        with tempfile.TemporaryFile() as handle:
            fd = os.dup(handle.fileno())
    if data:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    return fd


_defaults: list[tuple[str, str]] = []


def _bash_defaults() -> tuple[str, str]:
    """The options of a fresh bash here (once per process; the sandbox runs the same bash)."""
    if not _defaults:
        try:
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-c", DEFAULT_OPTIONS_COMMAND],
                capture_output=True,
                timeout=10,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                stdin=subprocess.DEVNULL,
            )
            lines = done.stdout.decode("utf-8", "replace").splitlines() if done.returncode == 0 else []
        except (OSError, subprocess.TimeoutExpired):
            lines = []
        _defaults.append((lines[0], lines[1]) if len(lines) == 2 else ("", ""))
    return _defaults[0]


def _read_all(fd: int) -> bytes:
    size = min(os.fstat(fd).st_size, _MAX_DUMP)
    return os.pread(fd, size, 0) if size else b""


class LocalEnvironment(FilesEnvironment):
    """The session's walls on this machine (see the module docstring)."""

    kind = "local"
    python = sys.executable

    def __init__(self, spec: EnvironmentSpec) -> None:
        from ..sandbox import Sandbox

        super().__init__(spec)
        settings = _settings(spec)
        self.tmp = Path(tempfile.mkdtemp(prefix="hermes-session-"))
        approve = spec.approve
        self.sandbox: Sandbox = Sandbox(
            settings,
            workspace=spec.workspace,
            hidden=spec.hidden,
            tmp=self.tmp,
            network_approval=(lambda host, why: approve("network", host, why))
            if approve is not None
            else None,
        )
        self._workspace = str(self.sandbox.workspace)
        self._grants = [
            os.path.realpath(p) for p in settings.read_write
        ]  # writable places a session may stay in
        self.shell = ShellSession(self._workspace, self._stay, _bash_defaults())
        self._files: RootedFiles | None = None
        self._live: set[LocalProcess] = set()
        self._lock = threading.Lock()
        self._closed = False
        # the private /tmp goes with the environment: closed, garbage-collected unclosed, or at exit
        self._remove_tmp = weakref.finalize(self, shutil.rmtree, str(self.tmp), True)

    @classmethod
    def probe(cls, spec: EnvironmentSpec) -> EnvironmentStatus:
        from ..sandbox import GUARANTEES, LIMITATIONS, choose_backend

        settings = _settings(spec)
        choice = choose_backend(settings.backend)
        detail = f"{choice.name or 'no'} sandbox on this machine"
        if choice.backend is None:
            return EnvironmentStatus(
                kind="local",
                ready=False,
                detail=detail,
                reason=choice.reason,
                fix='install bubblewrap (Debian/Ubuntu: apt install bubblewrap), or set [sandbox] backend = "none"',
                files_ready=True,
            )
        if shutil.which("bash") is None:
            return EnvironmentStatus(
                kind="local", ready=False, detail=detail, reason="bash is not installed", fix="install bash"
            )
        if Path(os.path.realpath(spec.workspace)) == Path("/"):
            return EnvironmentStatus(
                kind="local",
                ready=False,
                detail=detail,
                reason="the workspace is /, so the sandbox would have no walls",
                fix="run hermes from a project folder (or pass --workspace)",
            )
        return EnvironmentStatus(
            kind="local",
            ready=True,
            detail=detail,
            reason=choice.reason,
            guarantees=(
                *GUARANTEES.get(choice.name, ()),
                "one private /tmp per session, the same for commands and the file tools",
                "the file tools open every path beneath the same roots (openat2, RESOLVE_BENEATH): no link, "
                "'..' or absolute path reaches outside them, whatever the path guard says",
            ),
            limitations=tuple(LIMITATIONS.get(choice.name, ())),
        )

    def status(self) -> EnvironmentStatus:
        return self.probe(self.spec)

    # -- where things are --------------------------------------------------------------------------------

    @property
    def workspace(self) -> str:
        return self._workspace

    @property
    def cwd(self) -> str:
        return self.shell.cwd

    @property
    def temp_dir(self) -> str:
        # bwrap shows the session's folder as /tmp; Landlock cannot, so it is reached (and TMPDIR names it) at its
        # own path; without walls /tmp is the host's
        return str(self.tmp) if self.sandbox.backend == "landlock" else "/tmp"

    @property
    def files(self) -> RootedFiles:
        """The file operations of this session, beneath the sandbox's view (built on first use)."""
        if self._files is None:
            with self._lock:
                if self._files is None:
                    self._files = self._rooted(self.sandbox.layout())
        return self._files

    def _rooted(self, layout: Layout) -> RootedFiles:
        tmp = Path("/tmp") if self.sandbox.backend in ("none", "") else self.tmp
        roots = [Root(self.temp_dir, tmp, True)]
        roots += [Root(str(p), p, False) for p, target in layout.system if target is None]
        roots += [Root(str(p), p, False) for p in layout.read_only]
        roots += [Root(str(p), p, True) for p in layout.read_write]
        roots += [Root(str(p), p, False) for p in self.spec.host_read_only]
        links = {str(p): os.path.join("/", target) for p, target in layout.system if target is not None}
        hidden = [*layout.hidden, *layout.etc_hidden, *layout.hermes, *self.spec.hidden]
        return RootedFiles(roots, hidden=hidden, read_only=layout.protected, links=links)

    def _may_stay(self, path: str) -> bool:
        """Whether a resolved directory may be the session's working directory: the workspace, its /tmp, the
        folders [sandbox] grants."""
        for root in (self._workspace, self.temp_dir, *self._grants):
            if path == root or path.startswith(root.rstrip("/") + "/"):
                return True
        return False

    def _stay(self, path: str) -> str | None:
        """The directory the session keeps for a path a command ended in (resolved here), or None."""
        try:
            real = self.files.resolve(path)
            if self.files.stat(real).kind != "dir":
                return None
        except (OSError, ValueError):
            return None
        return real if self._may_stay(real) else None

    def _workdir(self, workdir: str | None) -> str | None:
        if workdir is None:
            return None
        base = workdir if workdir.startswith("/") else os.path.join(self.cwd, workdir)
        try:
            real = self.files.resolve(os.path.normpath(base))
            info = self.files.stat(real)
        except FileNotFoundError:
            raise ToolError(f"workdir {workdir!r} is not an existing directory") from None
        except (PathOutsideRoots, OSError):
            info = None
            real = base
        if info is None or not self._may_stay(real):
            raise ToolError(
                f"workdir {workdir!r} is outside the workspace: commands start only in the workspace "
                f"({self._workspace}), /tmp and the folders [sandbox] grants"
            )
        if info.kind != "dir":
            raise ToolError(f"workdir {workdir!r} is not an existing directory")
        return real

    # -- commands ----------------------------------------------------------------------------------------

    def run(
        self,
        command: str | Sequence[str],
        *,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        limits: Limits | None = None,
        tool: str | None = None,
        input: bytes | None = None,
        split_output: bool = False,
        stderr_bytes: int | None = None,
        pass_fds: Sequence[int] = (),
    ) -> CommandResult:
        self._open()
        start_in = self._workdir(workdir)
        call_env = dict(env or {})
        options: dict[str, Any] = {
            "env": call_env,
            "timeout": timeout,
            "limits": limits,
            "tool": tool,
            "input": input,
            "split_output": split_output,
            "stderr_bytes": stderr_bytes,
        }
        if not isinstance(command, str):
            argv = self._argv(command, start_in)
            return _result(self.sandbox.run(argv, pass_fds=pass_fds, **options), ())
        state_in, state_out = self._state_in(start_in, call_env), _state_file(b"")
        try:
            argv = shell_argv(command, str(state_in), str(state_out))
            result = self.sandbox.run(argv, pass_fds=(state_in, state_out, *pass_fds), **options)
            dump = _read_all(state_out)
        finally:
            os.close(state_in)
            os.close(state_out)
        killed = result.timed_out or result.exit_code is None
        notes = self.shell.update(dump, workdir=start_in, killed=killed, call_env=call_env)
        return _result(result, notes)

    def _state_in(self, start_in: str | None, call_env: dict[str, str]) -> int:
        """A descriptor holding the script that restores the session's shell before a command."""
        base = self.sandbox.env(call_env)
        return _state_file(self.shell.restore_script(workdir=start_in, base_names=base, call_env=call_env))

    def _argv(self, command: Sequence[str], workdir: str | None) -> list[str]:
        argv = [str(a) for a in command]
        if not argv:
            raise ValueError("the command is empty")
        if workdir is not None and workdir != self._workspace:
            argv = ["env", "-C", workdir, "--", *argv]  # a folder of this environment, maybe not of the host
        return argv

    def start(
        self,
        command: str | Sequence[str],
        *,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        limits: Limits | None = None,
        tool: str | None = None,
        pty: bool = False,
    ) -> Process:
        self._open()
        start_in = self._workdir(workdir)
        call_env = dict(env or {})
        state_in: int | None = None
        if isinstance(command, str):
            state_in = self._state_in(start_in, call_env)
            argv = shell_argv(command, str(state_in), "")
        else:
            argv = self._argv(command, start_in)
        master = slave = None
        if pty:
            master, slave = open_pty()
            setsid = shutil.which("setsid")
            if setsid is not None:
                argv = [setsid, "-w", "-c", *argv]
        stdio: dict[str, Any] = (
            {"stdin": slave, "stdout": slave, "stderr": slave}
            if slave is not None
            else {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
        )
        try:
            proc = self.sandbox.start(
                argv,
                env=call_env,
                limits=limits,
                tool=tool,
                background=True,
                pass_fds=(state_in,) if state_in is not None else (),
                **stdio,
            )
        except BaseException:
            if master is not None:
                os.close(master)
            raise
        finally:
            for fd in (state_in, slave):
                if fd is not None:
                    os.close(fd)
        local = LocalProcess(proc, master=master, on_close=self._forget)
        with self._lock:
            self._live.add(local)
        return local

    def _forget(self, proc: LocalProcess) -> None:
        with self._lock:
            self._live.discard(proc)

    def _open(self) -> None:
        if self._closed:
            raise EnvironmentUnavailable("this session has ended; its environment is closed")

    # -- files -------------------------------------------------------------------------------------------

    def write_text(
        self, path: str, text: str, *, sync: bool = True, encoding: str = "utf-8", mode: int | None = None
    ) -> bool:
        return self.files.write_text(self.absolute(path), text, sync=sync, encoding=encoding, mode=mode)

    def local_path(self, path: str) -> Path | None:
        return self.files.local_path(self.absolute(path))

    # -- lifecycle ---------------------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._lock:
            live = list(self._live)
        for proc in live:
            with contextlib.suppress(Exception):
                proc.terminate(0.5)
            with contextlib.suppress(Exception):
                proc.close()
        self.sandbox.close()
        if self._files is not None:
            self._files.close()
        self._remove_tmp()


def _result(result: RunResult, notes: tuple[str, ...]) -> CommandResult:
    return CommandResult(
        exit_code=result.exit_code,
        output=result.output,
        stdout=result.stdout,
        stderr=result.stderr,
        omitted=result.omitted,
        stderr_omitted=result.stderr_omitted,
        duration=result.duration,
        timed_out=result.timed_out,
        limit=result.limit,
        kill_note=result.kill_note,
        leftovers_killed=result.leftovers_killed,
        notes=notes,
        quarantined=tuple(result.quarantined),
    )
