"""The ``ssh`` kind: a session's commands and files on a remote host, over one SSH connection per session.

The connection (asyncssh, on an event loop of its own thread) is opened on first use and closed with the
session. The host's key must be in ``[environment.ssh] known_hosts`` (no trust on first use: an unknown or
changed key refuses the connection, with the fix); hermes proves who it is with a key file or an agent. Each
command is one channel running the launcher of ``_remote``: the restore script goes first on stdin (ended by
a NUL byte), the dump and the launcher's control lines come back on stderr while the command's output comes
on stdout, so a command costs one channel and no more. A command that times out or a process that is ended
is ended on the remote host, its whole session, over another channel: closing the channel alone would leave
it running there.

Files go over SFTP on the same connection (``SftpFiles``). ``execute_code``'s tool bridge (a descriptor
passed to the command) is carried by a relay: the script gets the descriptor from a small Python relay on the
remote host, whose connections come back through a Unix socket forwarded over the connection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import posixpath
import shlex
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ToolError
from ._base import (
    CommandResult,
    EnvironmentSpec,
    EnvironmentStatus,
    EnvironmentUnavailable,
    Process,
)
from ._probe_cache import shared
from ._relay import RELAY
from ._remote import kill_argv, kill_note, launch_argv, parse_control, run_id
from ._shell import DEFAULT_OPTIONS_COMMAND, ShellSession
from ._ssh_files import SftpFiles
from ._ssh_loop import run as _run
from ._ssh_loop import submit as _run_async
from ._ssh_process import SshProcess
from ._ssh_settings import SshSettings, ssh_settings
from ._through_files import FilesEnvironment

if TYPE_CHECKING:
    from ..sandbox import Limits

__all__ = ["SshEnvironment"]

_SETUP = DEFAULT_OPTIONS_COMMAND + '; printf "%s\\n" "$HOME"; id -u; compgen -e'


def _connect_error(settings: SshSettings, exc: BaseException) -> EnvironmentUnavailable:
    import asyncssh

    where = settings.target
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return EnvironmentUnavailable(
            f"the host key of {where} is not the one in {settings.known_hosts} (or is not there): the connection "
            "was refused. Check the key with the host's owner, then add it (ssh-keyscan -p PORT HOST >> "
            "known_hosts after checking its fingerprint)"
        )
    if isinstance(exc, asyncssh.PermissionDenied):
        return EnvironmentUnavailable(
            f"{where} refused to log in {settings.user}: check [environment.ssh] key/agent and the remote "
            "authorized_keys"
        )
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return EnvironmentUnavailable(f"{where} did not answer within {settings.connect_timeout:.0f}s")
    if isinstance(exc, OSError):
        return EnvironmentUnavailable(f"cannot reach {where}: {exc.strerror or exc}")
    return EnvironmentUnavailable(f"cannot connect to {where}: {exc}")


async def _open(settings: SshSettings) -> Any:
    import asyncssh

    if settings.agent is True:
        agent_path: Any = os.environ.get("SSH_AUTH_SOCK") or None
    else:
        agent_path = settings.agent or None
    return await asyncssh.connect(
        settings.host,
        settings.port,
        username=settings.user,
        known_hosts=settings.known_hosts,
        client_keys=[settings.key] if settings.key else [],
        agent_path=agent_path,
        password=None,
        kbdint_auth=False,
        config=[],
        connect_timeout=settings.connect_timeout,
        keepalive_interval=settings.keepalive,
        login_timeout=settings.connect_timeout,
    )


# (host, port, user, key, known_hosts) -> when a login there was last tried (a probe, or a session connecting),
# and why it failed ("" when it succeeded)
_verified: dict[tuple[str, int, str, str, str], tuple[float, str]] = {}
_checking: dict[tuple[str, int, str, str, str], concurrent.futures.Future[str]] = {}
_checking_lock = threading.Lock()
_VERIFIED_FOR = 300.0
_LOGIN_BUDGET = 1.0  # what a probe spends on logging in: tool checks must answer within a couple of seconds


def _key(settings: SshSettings) -> tuple[str, int, str, str, str]:
    return settings.host, settings.port, settings.user, settings.key, settings.known_hosts


def _banner(settings: SshSettings) -> None:
    """Raise unless ``host:port`` answers with an SSH banner (plain sockets: no handshake, no asyncssh)."""
    with socket.create_connection((settings.host, settings.port), timeout=settings.connect_timeout) as sock:
        sock.settimeout(settings.connect_timeout)
        banner = sock.recv(256)
    if not banner.startswith(b"SSH-"):
        raise OSError(f"{settings.host}:{settings.port} does not answer as an SSH server")


def _login_verdict(settings: SshSettings) -> str | None:
    """``""`` when a login there succeeded recently, its failure when it failed, None when not known yet: a
    check is started (in the background) and given ``_LOGIN_BUDGET`` seconds."""
    key = _key(settings)
    known = _verified.get(key)
    if known is not None and time.monotonic() - known[0] < (_VERIFIED_FOR if not known[1] else 30.0):
        return known[1]
    with _checking_lock:
        running = _checking.get(key)
        if running is None or running.done():
            running = _checking[key] = _run_async(_login(settings))
    try:
        return running.result(_LOGIN_BUDGET)
    except concurrent.futures.TimeoutError:
        return None


async def _login(settings: SshSettings) -> str:
    try:
        conn = await _open(settings)
    except Exception as exc:
        reason = _connect_error(settings, exc).message
        _verified[_key(settings)] = (time.monotonic(), reason)
        return reason
    conn.close()
    _verified[_key(settings)] = (time.monotonic(), "")
    return ""


def _fix(reason: str, settings: SshSettings) -> str:
    if "host key" in reason:
        return f"verify the host's key fingerprint, then add it to {settings.known_hosts}"
    if "refused to log in" in reason:
        return "put the public key of [environment.ssh] key in the remote user's ~/.ssh/authorized_keys"
    return f"check that {settings.host}:{settings.port} runs sshd and is reachable from here"


class SshEnvironment(FilesEnvironment):
    """A session on a remote host (see the module docstring)."""

    kind = "ssh"

    def __init__(self, spec: EnvironmentSpec) -> None:
        super().__init__(spec)
        self.settings = ssh_settings(spec.settings)
        self.python = self.settings.python
        self._conn: Any = None
        self._files: SftpFiles | None = None
        self._home = ""
        self._workspace = self.settings.workspace
        self._rdir = ""
        self._base_names: frozenset[str] = frozenset()
        self.shell: ShellSession | None = None
        self._live: set[SshProcess] = set()
        self._lock = threading.Lock()
        self._closed = False

    # -- whether it can run ------------------------------------------------------------------------------

    @classmethod
    def probe(cls, spec: EnvironmentSpec) -> EnvironmentStatus:
        import importlib.util

        try:
            settings = ssh_settings(spec.settings)
        except EnvironmentUnavailable as err:
            return _not_ready(err.message, "correct [environment.ssh] (hermes env status shows the keys)")
        if importlib.util.find_spec("asyncssh") is None:
            return _not_ready("asyncssh is not installed", "pip install 'hermes-tools[ssh]' (or asyncssh)")
        if not os.path.isfile(settings.known_hosts):
            return _not_ready(
                f"the known_hosts file {settings.known_hosts} does not exist, so the host's key cannot be checked",
                "put the host's key there (after checking its fingerprint), or set [environment.ssh] known_hosts",
                detail=settings.target,
            )
        if settings.key and not os.path.isfile(settings.key):
            return _not_ready(
                f"the key file {settings.key} does not exist",
                "set [environment.ssh] key to a private key file",
                detail=settings.target,
            )

        return shared(("ssh", _key(settings)), 5.0, lambda: _probe(settings))

    def status(self) -> EnvironmentStatus:
        return self.probe(self.spec)

    # -- the connection ----------------------------------------------------------------------------------

    def _ensure(self) -> Any:
        if self._closed:
            raise EnvironmentUnavailable("this session has ended; its ssh environment is closed")
        conn = self._conn
        if conn is not None and not conn.is_closed():
            return conn
        with self._lock:
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            try:
                self._conn, sftp, setup = _run(self._connect(), self.settings.connect_timeout + 30)
            except EnvironmentUnavailable:
                raise
            except Exception as exc:
                failure = _connect_error(self.settings, exc)
                _verified[_key(self.settings)] = (time.monotonic(), failure.message)
                raise failure from None
            _verified[_key(self.settings)] = (time.monotonic(), "")
            lines = setup.splitlines()
            self._home = lines[2] if len(lines) > 2 else "/"
            self._base_names = frozenset(lines[4:])
            self._workspace = self.settings.workspace or self._home
            writable = [self._workspace, "/tmp", *self.settings.read_write]
            hidden = [posixpath.join(self._home, ".ssh")]
            self._files = SftpFiles(sftp, _run, writable=writable, hidden=hidden)
            try:
                if self._files.stat(self._workspace).kind != "dir":
                    raise FileNotFoundError(self._workspace)
            except OSError:
                raise EnvironmentUnavailable(
                    f"the remote workspace {self._workspace} is not a folder on {self.settings.host}: make it, or "
                    "set [environment.ssh] workspace"
                ) from None
            if self.shell is None:
                self.shell = ShellSession(
                    self._workspace, self._stay, (lines[0], lines[1]) if lines else ("", "")
                )
            return self._conn

    async def _connect(self) -> tuple[Any, Any, str]:
        import asyncssh

        conn = await _open(self.settings)
        try:
            done = await conn.run("exec bash --noprofile --norc -c " + shlex.quote(_SETUP), check=False)
            if done.exit_status != 0:
                raise EnvironmentUnavailable(
                    f"{self.settings.host} cannot run bash ({str(done.stderr).strip() or done.exit_status}): the "
                    "ssh kind needs bash on the remote host"
                )
            sftp = await conn.start_sftp_client()
            self._rdir = f"/tmp/hermes-{run_id()}"
            await sftp.mkdir(self._rdir, asyncssh.SFTPAttrs(permissions=0o700))
        except BaseException:
            conn.close()
            raise
        return conn, sftp, str(done.stdout)

    def _stay(self, path: str) -> str | None:
        # the remote host is the boundary: the session may stay in any folder there (the next command's `cd`
        # says when it is gone)
        return posixpath.normpath(path)

    def _workdir(self, workdir: str | None) -> str | None:
        if workdir is None:
            return None
        base = workdir if workdir.startswith("/") else posixpath.join(self.cwd, workdir)
        real = self.resolve(posixpath.normpath(base))
        try:
            kind = self.stat(real).kind
        except OSError:
            kind = ""
        if kind != "dir":
            raise ToolError(f"workdir {workdir!r} is not an existing directory on {self.settings.host}")
        return real

    # -- where things are --------------------------------------------------------------------------------

    @property
    def workspace(self) -> str:
        if not self._workspace:
            self._ensure()
        return self._workspace

    @property
    def cwd(self) -> str:
        return self.shell.cwd if self.shell is not None else self.workspace

    @property
    def files(self) -> SftpFiles:
        self._ensure()
        assert self._files is not None
        return self._files

    # -- commands ----------------------------------------------------------------------------------------

    def _restore(self, command: str | Sequence[str], start_in: str | None, call_env: dict[str, str]) -> bytes:
        if not isinstance(command, str):
            return b""
        assert self.shell is not None
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in call_env.items() if k.isidentifier())
        script = self.shell.restore_script(
            workdir=start_in, base_names=self._base_names | call_env.keys(), call_env=call_env
        )
        return exports.encode("utf-8", "surrogateescape") + script

    def _argv_env(self, command: Sequence[str], call_env: dict[str, str]) -> list[str]:
        argv = [str(a) for a in command]
        if call_env:
            argv = ["env", *(f"{k}={v}" for k, v in call_env.items()), "--", *argv]
        return argv

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
        from ..sandbox import DEFAULT_OUTPUT_BYTES
        from ..sandbox._capture import HeadTail

        conn = self._ensure()
        start_in = self._workdir(workdir)
        call_env = dict(env or {})
        rid = run_id()
        control_file = f"{self._rdir}/{rid}.ctl"
        relay = ""
        if not isinstance(command, str):
            command = self._argv_env(command, call_env)
            if pass_fds:
                if len(pass_fds) != 1:
                    raise EnvironmentUnavailable("the ssh kind relays one passed descriptor per command")
                relay = f"{self._rdir}/{rid}.sock"
                command = [self.python, "-I", "-c", RELAY, relay, str(int(pass_fds[0])), *command]
        elif pass_fds:
            raise EnvironmentUnavailable("the ssh kind passes descriptors to argv commands only")
        inner = launch_argv(
            command,
            state_in="stdin",
            state_out="8" if not split_output else f"{self._rdir}/{rid}.out",
            control="2" if not split_output else control_file,
            merge=not split_output,
            workdir=start_in or self.workspace,
            limits=limits,
        )
        stdin = self._restore(command, start_in, call_env) + b"\0" + (input or b"")
        cap = (limits.max_output_bytes if limits is not None else None) or DEFAULT_OUTPUT_BYTES
        out, err = HeadTail.of(cap), HeadTail.of(stderr_bytes or cap)
        began = time.monotonic()
        channel = bytearray()
        chan = socket.socket(fileno=os.dup(pass_fds[0])) if relay else None
        try:
            timed_out, note = _run(
                self._run_channel(
                    conn,
                    "exec " + shlex.join(inner),
                    stdin,
                    out,
                    err if split_output else channel,
                    timeout,
                    control_file if split_output else None,
                    relay,
                    chan,
                ),
                None,
            )
        except EnvironmentUnavailable:
            raise
        except Exception as exc:
            if conn.is_closed():  # the next command connects again (the session's shell state is kept)
                self._conn = None
            raise EnvironmentUnavailable(
                f"the command could not run on {self.settings.target}: {exc}"
            ) from None
        finally:
            if chan is not None:
                chan.close()
        if split_output:
            control = parse_control(self._fetch(control_file))
            dump = self._fetch(f"{self._rdir}/{rid}.out") if isinstance(command, str) else b""
        else:
            control = parse_control(bytes(channel))
            dump = control.dump
        killed = timed_out or control.exit_code is None
        notes: tuple[str, ...] = ()
        if isinstance(command, str) and self.shell is not None:
            notes = self.shell.update(dump, workdir=start_in, killed=killed, call_env=call_env)
        output = out.text()
        return CommandResult(
            exit_code=None if timed_out else control.exit_code,
            output=output,
            stdout=output if split_output else "",
            stderr=err.text() if split_output else "",
            omitted=out.omitted,
            stderr_omitted=err.omitted if split_output else 0,
            duration=time.monotonic() - began,
            timed_out=timed_out,
            kill_note=note,
            leftovers_killed=control.leftovers > 0,
            notes=notes,
        )

    def _fetch(self, path: str) -> bytes:
        async def get() -> bytes:
            assert self._files is not None
            sftp = self._files._sftp
            try:
                async with sftp.open(path, "rb", encoding=None) as handle:
                    data: bytes = await handle.read()
                await sftp.remove(path)
            except Exception:  # the command removed it, or never wrote it
                return b""
            return data

        return _run(get(), 60)

    async def _run_channel(
        self,
        conn: Any,
        command: str,
        stdin: bytes,
        out: Any,
        err: Any,
        timeout: float | None,
        control_file: str | None,
        relay: str,
        chan: socket.socket | None,
    ) -> tuple[bool, str]:
        listener = None
        if relay and chan is not None:
            listener = await conn.start_unix_server(lambda: _relay_handler(chan), relay)
        try:
            proc = await conn.create_process(command, encoding=None)
            proc.stdin.write(stdin)
            proc.stdin.write_eof()

            async def pump(stream: Any, sink: Any) -> None:
                while True:
                    data = await stream.read(65536)
                    if not data:
                        return
                    if isinstance(sink, bytearray):
                        sink += data
                    else:
                        sink.write(data)

            work = asyncio.gather(pump(proc.stdout, out), pump(proc.stderr, err), proc.wait_closed())
            try:
                await asyncio.wait_for(asyncio.shield(work), timeout)
                return False, ""
            except TimeoutError:
                pid = parse_control(bytes(err)).pid if isinstance(err, bytearray) else None
                if pid is None and control_file is not None:
                    pid = await self._remote_pid(control_file)
                note = await self._end(conn, pid, 2.0) if pid is not None else "killed (its channel)"
                proc.close()
                with contextlib.suppress(asyncio.TimeoutError, Exception):
                    await asyncio.wait_for(work, 5)
                return True, note
        finally:
            if listener is not None:
                listener.close()

    async def _remote_pid(self, control_file: str) -> int | None:
        assert self._files is not None
        try:
            async with self._files._sftp.open(control_file, "rb", encoding=None) as handle:
                return parse_control(await handle.read()).pid
        except Exception:
            return None

    async def _end(self, conn: Any, pid: int, grace: float) -> str:
        done = await conn.run(shlex.join(kill_argv(pid, grace)), check=False)
        return kill_note(str(done.stdout or ""))

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
        conn = self._ensure()
        start_in = self._workdir(workdir)
        call_env = dict(env or {})
        rid = run_id()
        control_file = f"{self._rdir}/{rid}.ctl"
        state_file = ""
        if isinstance(command, str):
            state_file = f"{self._rdir}/{rid}.in"
            self.files.write(state_file, self._restore(command, start_in, call_env), mode=0o600)
        else:
            command = self._argv_env(command, call_env)
        inner = launch_argv(
            command,
            state_in=state_file,
            control=control_file,
            merge=True,
            workdir=start_in or self.workspace,
            limits=limits,
        )
        options: dict[str, Any] = {"encoding": None}
        if pty:
            options.update(term_type="xterm", term_size=(200, 50))
        try:
            proc = _run(conn.create_process("exec " + shlex.join(inner), **options), 60)
        except Exception as exc:
            raise EnvironmentUnavailable(
                f"could not start a command on {self.settings.target}: {exc}"
            ) from None
        process = SshProcess(self, proc, control_file, state_file, pty=pty)
        with self._lock:
            self._live.add(process)
        return process

    def _forget(self, process: SshProcess) -> None:
        with self._lock:
            self._live.discard(process)

    # -- files -------------------------------------------------------------------------------------------

    def expand_user(self, path: str) -> str:
        if path == "~" or path.startswith("~/"):
            self._ensure()
            return self._home.rstrip("/") + path[1:]
        return path

    def host_view(self, path: str) -> str:
        workspace = self.workspace.rstrip("/")
        if path == self.workspace or path.startswith(workspace + "/"):
            return os.path.realpath(self.spec.workspace) + path[len(workspace) :]
        return path

    # -- lifecycle ---------------------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._lock:
            live = list(self._live)
        for process in live:
            with contextlib.suppress(Exception):
                process.close()
        conn, self._conn = self._conn, None
        if conn is None:
            return

        async def finish() -> None:
            with contextlib.suppress(Exception):
                if self._rdir:
                    await conn.run("rm -rf -- " + shlex.quote(self._rdir), check=False)
            conn.close()
            with contextlib.suppress(Exception):
                await conn.wait_closed()

        with contextlib.suppress(Exception):
            _run(finish(), 15)


def _relay_handler(chan: socket.socket) -> Any:
    """A connection from the remote relay: join it to a new connection of the host's bridge (``chan``)."""

    async def handle(reader: Any, writer: Any) -> None:
        ours, theirs = socket.socketpair()
        try:
            socket.send_fds(chan, [b"call"], [theirs.fileno()])
        except OSError:
            ours.close()
            writer.close()
            return
        finally:
            theirs.close()
        local_reader, local_writer = await asyncio.open_unix_connection(sock=ours)

        async def up() -> None:
            while data := await reader.read(65536):
                local_writer.write(data)
                await local_writer.drain()
            local_writer.write_eof()

        async def down() -> None:
            while data := await local_reader.read(65536):
                writer.write(data)
            writer.write_eof()

        with contextlib.suppress(Exception):
            await asyncio.gather(up(), down())
        local_writer.close()
        writer.close()

    return handle


def _probe(settings: SshSettings) -> EnvironmentStatus:
    """Whether the host answers as an SSH server, and (when it can tell within ``_LOGIN_BUDGET``, or knows
    from a recent login) whether its key and the login are good."""
    try:
        _banner(settings)
    except OSError as exc:
        reason = _connect_error(settings, exc).message
        return _not_ready(reason, _fix(reason, settings), detail=settings.target)
    failure = _login_verdict(settings)
    if failure:
        return _not_ready(failure, _fix(failure, settings), detail=settings.target)
    verified = failure is not None
    return EnvironmentStatus(
        kind="ssh",
        ready=True,
        detail=settings.target + ("" if verified else " (reachable; the login is checked on first use)"),
        guarantees=(
            f"commands and file tools run on {settings.host} as {settings.user}, over one connection per "
            "session; the host's key is checked against " + settings.known_hosts,
            "the file tools write only in the remote workspace, /tmp and [environment.ssh] read_write, and "
            "do not see the remote ~/.ssh",
            "a command that times out is ended on the remote host with its whole session",
        ),
        limitations=(
            "what a command may do there is what the remote user may do: the remote host is the boundary "
            "(no sandbox is added on it)",
            "per command, the limits are ulimits (data size, CPU time, file size)",
            "the host's workspace is not copied: the remote workspace is its own folder",
        ),
    )


def _not_ready(reason: str, fix: str, *, detail: str = "") -> EnvironmentStatus:
    return EnvironmentStatus(
        kind="ssh", ready=False, detail=detail, reason=reason, fix=fix, files_ready=False
    )
