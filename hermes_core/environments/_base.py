"""The environment contract: ``Environment`` (commands, processes, files, status) and the types it speaks in.

Every kind (``local``, ``container``, ``ssh``, a plugin's) subclasses ``Environment`` and implements its abstract
methods; tools only ever call these methods, so a tool never needs to know where it runs. Paths are the
environment's own (absolute POSIX strings as a command there would see them); nothing here assumes they are
on this host's disk (``local_path`` says when they are).
"""

from __future__ import annotations

import abc
import errno
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar

from ..errors import ToolError

if TYPE_CHECKING:
    from ..config import Config
    from ..sandbox import Limits

__all__ = [
    "CommandResult",
    "Environment",
    "EnvironmentSpec",
    "EnvironmentStatus",
    "EnvironmentUnavailable",
    "FileInfo",
    "NotRegularFile",
    "PathOutsideRoots",
    "Process",
    "ReadOnlyPath",
]


class EnvironmentUnavailable(ToolError):
    """The session's environment cannot start (engine missing, host unreachable, walls impossible); the
    message says why and what to change."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="environment", retryable=False)


class PathOutsideRoots(PermissionError):
    """The path lies outside every root of the environment (the workspace, ``/tmp``, the granted folders), or
    in a part of one that is hidden; nothing was read or written."""

    def __init__(self, path: str, why: str = "") -> None:
        detail = why or "it is outside the workspace and the folders this environment shows"
        super().__init__(errno.EACCES, f"{path} is not reachable: {detail}", path)
        self.why = detail


class ReadOnlyPath(PermissionError):
    """The path is visible but read-only in this environment (system folders, toolchains, protected files)."""

    def __init__(self, path: str, why: str = "") -> None:
        detail = why or "it is read-only in this environment"
        super().__init__(errno.EROFS, f"{path} cannot be written: {detail}", path)
        self.why = detail


class NotRegularFile(OSError):
    """The path is a device, a pipe or a socket, not a regular file."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    """What ``Environment.stat`` found: ``kind`` is "file", "dir", "symlink" or "other"."""

    path: str
    kind: str
    size: int
    mtime: float
    mode: int


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What ``Environment.run`` did.

    ``exit_code`` is None when the command was ended (timeout or a limit: ``timed_out``, ``limit`` and
    ``kill_note`` say which and how). ``output`` is stdout and stderr interleaved unless ``split_output`` asked
    for them apart (``stdout``, ``stderr``). ``omitted`` counts bytes cut from the middle of the output.
    ``notes`` are what the model should know about the session itself (its directory was reset, its state
    was kept as it was before a killed command...); ``quarantined`` names files the host would run later that
    the command planted and the environment undid.
    """

    exit_code: int | None
    output: str
    stdout: str = ""
    stderr: str = ""
    omitted: int = 0
    stderr_omitted: int = 0
    duration: float = 0.0
    timed_out: bool = False
    limit: str = ""
    kill_note: str = ""
    leftovers_killed: bool = False
    notes: tuple[str, ...] = ()
    quarantined: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EnvironmentStatus:
    """Whether an environment can run here, what it runs on, and what it guarantees.

    ``ready`` is False when commands cannot run (``reason`` says why, ``fix`` what to change);
    ``files_ready`` when the file tools still work then (a local workspace without a sandbox backend), None
    when they follow ``ready``. ``detail`` names the engine, host or backend ("bwrap", "podman 4.3",
    "dev@build-box:22").
    """

    kind: str
    ready: bool
    detail: str = ""
    reason: str = ""
    fix: str = ""
    files_ready: bool | None = None
    guarantees: tuple[str, ...] = ()
    limitations: tuple[str, ...] = ()

    @property
    def files_usable(self) -> bool:
        return self.ready if self.files_ready is None else self.files_ready


@dataclass(frozen=True, slots=True)
class EnvironmentSpec:
    """Everything a kind gets to build one session's environment (``Environment.__init__``) or to say whether it
    could (``Environment.probe``).

    ``workspace`` is the host's workspace folder (bind it, sync it or map it: a kind decides); ``settings`` the
    kind's own table (``[environment.<kind>]``, secrets resolved); ``config`` the whole configuration;
    ``state_dir`` a host folder the kind may keep its files in (per kind, below hermes's data folder); ``hidden``
    host paths that must never be reachable from inside; ``host_read_only`` host folders the file tools may read
    in every kind (the pipeline's saved full results); ``approve(kind, subject, reason)`` asks the tool system's
    approval flow for this session (a network name the sandbox's proxy does not know, a host key...) and says
    whether it was approved (None: nobody to ask, refuse).
    """

    kind: str
    session_id: str
    workspace: Path
    settings: Mapping[str, Any] = field(default_factory=dict)
    config: Config | None = None
    state_dir: Path | None = None
    hidden: tuple[Path, ...] = ()
    host_read_only: tuple[Path, ...] = ()
    approve: Callable[[str, str, str], bool] | None = None


class Process(abc.ABC):
    """A process started by ``Environment.start``: one merged output stream (or the terminal of a pty), stdin,
    and control over its whole process tree, wherever it runs.

    ``read`` blocks until output arrives and returns ``b""`` once the process closed its output; ``write``
    feeds stdin (the terminal's input with a pty); ``close_stdin`` sends end-of-file; ``terminate`` ends every
    process of the tree (SIGTERM, ``grace`` seconds, SIGKILL); ``close`` frees what it holds (ending the tree
    first if it still runs). ``pid`` is a host pid for local processes, else None or the remote one.
    """

    pid: int | None = None
    pty: bool = False

    @property
    @abc.abstractmethod
    def returncode(self) -> int | None:
        """The exit status once it exited (a signal shows as ``-N`` or ``128+N``), else None."""

    @property
    def running(self) -> bool:
        return self.returncode is None

    @abc.abstractmethod
    def read(self, size: int = 65536) -> bytes: ...

    @abc.abstractmethod
    def write(self, data: bytes) -> None: ...

    @abc.abstractmethod
    def close_stdin(self) -> None: ...

    @abc.abstractmethod
    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the process to exit; True when it has."""

    @abc.abstractmethod
    def terminate(self, grace: float = 2.0) -> str:
        """End the whole tree; returns what it did ("already exited", "terminated (SIGTERM)", ...)."""

    @abc.abstractmethod
    def close(self) -> None: ...


class Environment(abc.ABC):
    """Where one session's commands and file operations happen (see ``hermes_core.environments``).

    Commands: ``run`` a command to its end (a string is a shell command line with the session's state, a
    sequence an argv without a shell) or ``start`` one to manage (``Process``). Files: ``resolve``, ``stat``,
    ``open_read``, ``write`` (atomic), ``remove``, ``listdir``; every path is the environment's own, and a
    path outside what the environment shows fails with ``PathOutsideRoots`` whatever the guards said.
    ``status`` says whether it can run and what it guarantees; ``close`` ends everything it started.
    """

    kind: ClassVar[str] = ""
    #: The command that runs Python 3 in this environment (``execute_code``).
    python: str = "python3"

    def __init__(self, spec: EnvironmentSpec) -> None:
        self.spec = spec

    def __repr__(self) -> str:
        return f"<{type(self).__name__} kind={self.kind} session={self.spec.session_id!r}>"

    @classmethod
    def probe(cls, spec: EnvironmentSpec) -> EnvironmentStatus:
        """Whether this kind can start with ``spec`` here (cheap; cached by the caller). Kinds override it to
        check their engine or host; an environment that cannot start hides the tools that need it."""
        return EnvironmentStatus(kind=cls.kind or spec.kind, ready=True)

    # -- where things are --------------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.spec.session_id

    @property
    @abc.abstractmethod
    def workspace(self) -> str:
        """The workspace as commands here see it (relative paths of the file tools start there)."""

    @property
    @abc.abstractmethod
    def cwd(self) -> str:
        """The session shell's current directory (where the next shell command starts)."""

    @property
    def temp_dir(self) -> str:
        """The session's folder for temporary files, as commands here see it (``/tmp`` unless a kind says
        otherwise; the local kind under Landlock names its private folder, which is also ``TMPDIR``)."""
        return "/tmp"

    def absolute(self, path: str) -> str:
        """``path`` made absolute against the workspace, ``~`` left to the caller (no shell here)."""
        if not path:
            raise ValueError("the path is empty")
        if "\x00" in path:
            raise ValueError("the path contains a NUL byte")
        return path if path.startswith("/") else os.path.join(self.workspace, path)

    # -- commands ----------------------------------------------------------------------------------------

    @abc.abstractmethod
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
        """Run ``command`` to its end (or ``timeout`` seconds) and return what it did; never leaves a process.

        A string runs in the session's shell: it starts in the session's directory (or ``workdir``) with the
        session's variables, functions and options, and what it changes there persists for the next command
        (a command that is killed changes nothing). A sequence is an argv run without a shell in ``workdir``
        (default: the workspace). ``env`` adds variables for this command only. ``pass_fds`` are host
        descriptors the command inherits (a private channel back to the host, as ``execute_code``'s tool bridge);
        a kind that cannot hand descriptors over raises ``EnvironmentUnavailable`` when given some. Raises
        ``EnvironmentUnavailable`` when the environment cannot run commands, ``ToolError`` for a ``workdir``
        it does not allow.
        """

    @abc.abstractmethod
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
        """Start ``command`` (a string: in the session's shell state, which it does not change) and return its
        ``Process``; ``pty=True`` gives it a terminal (REPLs, prompts that read /dev/tty). The caller closes
        the process; the environment ends whatever is still running when it closes."""

    # -- files -------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def resolve(self, path: str) -> str:
        """The real path of ``path`` here: symbolic links followed (within what the environment shows), ``.``
        and ``..`` resolved; a missing last part is kept as it is. Raises ``PathOutsideRoots`` when it leads
        outside."""

    @abc.abstractmethod
    def stat(self, path: str) -> FileInfo:
        """What ``path`` is (no symbolic link followed in any part: ``resolve`` first)."""

    @abc.abstractmethod
    def open_read(self, path: str) -> BinaryIO:
        """The regular file ``path`` opened for reading (seekable). No symbolic link may be in the path
        (``SymlinkError``); ``IsADirectoryError``, ``NotRegularFile`` and ``FileNotFoundError`` as usual."""

    @abc.abstractmethod
    def write(self, path: str, data: bytes, *, create_parents: bool = True, mode: int | None = None) -> bool:
        """Replace ``path`` with ``data`` atomically (a reader sees the old file or the new one); returns True
        when it existed. Keeps an existing file's mode unless ``mode`` is given. ``ReadOnlyPath`` where the
        environment shows the folder read-only."""

    @abc.abstractmethod
    def remove(self, path: str) -> None:
        """Remove the file ``path`` (not a directory)."""

    @abc.abstractmethod
    def listdir(self, path: str) -> list[str]:
        """The names in the directory ``path``, sorted."""

    def local_path(self, path: str) -> Path | None:
        """The host path behind ``path`` when the environment's files for it are on this host's disk (checked
        against the roots), else None. Host-side engines (ripgrep) use it."""
        return None

    def hidden_within(self, path: str) -> list[str]:
        """Paths beneath the folder ``path`` that the environment hides (a host-side search skips them)."""
        return []

    # -- lifecycle ---------------------------------------------------------------------------------------

    @abc.abstractmethod
    def status(self) -> EnvironmentStatus:
        """Whether this environment runs now, on what, and what it guarantees."""

    @abc.abstractmethod
    def close(self) -> None:
        """End every process started here and free what the environment holds (its session ended)."""
