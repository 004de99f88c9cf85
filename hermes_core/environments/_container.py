"""The ``container`` kind: a session's commands and files in a container of podman or Docker, driven by its CLI.

A container is made on first use (``run -d``, ``--init``, the workspace bind-mounted at ``workdir``, the
network, limits and user of ``[environment.container]``) and reused by every command of the session, or of the
workspace (``scope = "workspace"``); it is removed when the last session using it closes, unless ``persist``
keeps it for the next time (a kept container made from other settings is replaced). Each command is one
``exec`` of the launcher of ``_remote``: the session's shell state goes in and comes back through files of a
private host folder bind-mounted at ``/run/hermes``, so a command costs one ``exec`` and nothing more. A
command that times out is ended inside the container (its whole session), not just its local client.

File operations open paths beneath the container's own root file system as the host sees it (the engine's
merged overlay folder; rootful engines) and beneath the mounts, with ``RootedFiles``: nothing on the host's disk
outside them is reachable, and the container's absolute links are followed through the container's tree.
Files written for a container user other than root are handed to that user.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ToolError
from ._base import (
    CommandResult,
    EnvironmentSpec,
    EnvironmentStatus,
    EnvironmentUnavailable,
    PathOutsideRoots,
    Process,
)
from ._cli_process import ClientProcess
from ._container_box import (
    IO_PATH,
    NONCE,
    Box,
    Plan,
    acquire,
    container_name,
    engine_run,
    inspect,
    release,
    why,
)
from ._container_settings import ContainerSettings, container_settings, find_engine
from ._owned import OwnedFiles
from ._probe_cache import shared
from ._remote import kill_argv, kill_note, launch_argv, parse_control, run_id
from ._rooted import Root
from ._shell import ShellSession
from ._through_files import FilesEnvironment

if TYPE_CHECKING:
    from ..sandbox import Limits, Sandbox

__all__ = ["ContainerEnvironment"]


class ContainerEnvironment(FilesEnvironment):
    """A session's container (see the module docstring)."""

    kind = "container"

    def __init__(self, spec: EnvironmentSpec) -> None:
        super().__init__(spec)
        self.settings: ContainerSettings = container_settings(spec.settings)
        if not self.settings.image:
            raise EnvironmentUnavailable(
                'no image is configured: set [environment.container] image = "NAME" (an image on this machine)'
            )
        found = find_engine(self.settings.engine)
        if found is None:
            raise EnvironmentUnavailable(_missing_engine(self.settings.engine))
        self.engine, self.flavour = found
        self.python = self.settings.python
        self._host_workspace = os.path.realpath(spec.workspace)
        self._workspace = self.settings.workdir
        self._name = container_name(self.settings, self._host_workspace, spec.session_id)
        self._box: Box | None = None
        self._files: OwnedFiles | None = None
        self.shell: ShellSession | None = None
        self._sandbox: Sandbox | None = None
        self._live: set[ClientProcess] = set()
        self._lock = threading.Lock()
        self._closed = False

    # -- whether it can run ------------------------------------------------------------------------------

    @classmethod
    def probe(cls, spec: EnvironmentSpec) -> EnvironmentStatus:
        try:
            settings = container_settings(spec.settings)
        except EnvironmentUnavailable as err:
            return _not_ready(
                err.message, "correct [environment.container] (hermes env status shows the keys)"
            )
        return shared(("container", settings.digest("")), 5.0, lambda: _probe(settings))

    def status(self) -> EnvironmentStatus:
        status = self.probe(self.spec)
        if self._box is not None and status.ready:
            from dataclasses import replace

            return replace(status, detail=f"{status.detail}, container {self._box.name}")
        return status

    # -- where things are --------------------------------------------------------------------------------

    @property
    def workspace(self) -> str:
        return self._workspace

    @property
    def cwd(self) -> str:
        return self.shell.cwd if self.shell is not None else self._workspace

    @property
    def container_name(self) -> str:
        """The engine's name of this session's container (made on first use)."""
        return self._name

    @property
    def files(self) -> OwnedFiles:
        self._ensure()
        assert self._files is not None
        return self._files

    # -- the container -----------------------------------------------------------------------------------

    def _ensure(self) -> Box:
        if self._closed:
            raise EnvironmentUnavailable("this session has ended; its container environment is closed")
        box = self._box
        if box is not None and not box.removed:
            return box
        with self._lock:
            if self._box is not None and not self._box.removed:
                return self._box
            box = self._acquire()
            self._box = box
            roots = [Root(self._workspace, Path(self._host_workspace), True)]
            roots += [Root(m.path, Path(m.host), not m.read_only) for m in self.settings.mounts]
            hidden = list(self.spec.hidden)
            if box.rootfs is not None:
                roots.append(Root("/", box.rootfs, True))
                hidden += [box.rootfs / name for name in ("proc", "sys", "dev", IO_PATH.strip("/"))]
            owner = (box.uid, box.gid) if os.geteuid() == 0 and box.uid != 0 else None
            self._files = OwnedFiles(roots, hidden=hidden, owner=owner)
            self.shell = ShellSession(self._workspace, self._stay, box.defaults)
            return box

    def _acquire(self) -> Box:
        state = Path(self.spec.state_dir or Path.home() / ".local/share/hermes/environments/container")
        plan = Plan(
            self._name,
            self.engine,
            self.flavour,
            self.settings,
            self._host_workspace,
            state,
            self._network_args,
        )
        return acquire(plan)

    def _network_args(self) -> tuple[list[str], dict[str, str], str]:
        """The ``--network`` arguments, the variables that point tools at the proxy, and a label saying which
        namespace a kept container joined."""
        network = self.settings.network
        if network != "proxy":
            return ["--network", network], {}, ""
        from ..sandbox import Sandbox, proxy_env, settings_from_config

        approve = self.spec.approve
        self._sandbox = Sandbox(
            settings_from_config(self.spec.config),
            workspace=self.spec.workspace,
            hidden=self.spec.hidden,
            network_approval=(lambda host, why: approve("network", host, why))
            if approve is not None
            else None,
        )
        namespace, _proxy = self._sandbox.egress()
        if namespace is None:
            raise EnvironmentUnavailable("the sandbox could not make a network namespace for the proxy")
        path = f"/proc/{os.getpid()}/fd/{namespace.netns_fd}"
        return ["--network", f"ns:{path}"], proxy_env(namespace.port), f"{path}@{NONCE}"

    # -- the session's directory -------------------------------------------------------------------------

    def _stay(self, path: str) -> str | None:
        """The directory the session keeps for a path a command ended in: any folder of the container."""
        files = self._files
        if files is None:
            return None
        try:
            real = files.resolve(path)
            if files.stat(real).kind == "dir":
                return real
        except PathOutsideRoots:
            box = self._box
            return path if box is not None and box.rootfs is None else None  # unseen from here: trust it
        except (OSError, ValueError):
            return None
        return None

    def _workdir(self, workdir: str | None) -> str | None:
        if workdir is None:
            return None
        base = workdir if workdir.startswith("/") else os.path.join(self.cwd, workdir)
        real = self._stay(os.path.normpath(base))
        if real is None:
            raise ToolError(f"workdir {workdir!r} is not an existing directory of the container")
        return real

    # -- commands ----------------------------------------------------------------------------------------

    def _exec_argv(self, box: Box, *, stdin: bool, tty: bool, env: Mapping[str, str], fds: int) -> list[str]:
        argv = [box.engine, "exec"]
        if stdin:
            argv.append("-i")
        if tty:
            argv.append("-t")
        if fds:
            argv.append(f"--preserve-fds={fds}")
        for name, value in env.items():
            argv += ["-e", f"{name}={value}"]
        return [*argv, box.name]

    def _state_files(
        self,
        box: Box,
        rid: str,
        command: str | Sequence[str],
        start_in: str | None,
        call_env: dict[str, str],
    ) -> tuple[str, str]:
        """Write the restore script of a shell command; returns its path and the dump's, in the container."""
        if not isinstance(command, str):
            return "", ""
        assert self.shell is not None
        script = _exports(call_env) + self.shell.restore_script(
            workdir=start_in, base_names=box.base_names | call_env.keys(), call_env=call_env
        )
        path = box.io / f"{rid}.in"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(script)
            if box.uid != os.geteuid() and os.geteuid() == 0:
                os.fchown(handle.fileno(), box.uid, box.gid)
        return f"{IO_PATH}/{rid}.in", f"{IO_PATH}/{rid}.out"

    def _relay(
        self, box: Box, rid: str, command: str | Sequence[str], pass_fds: Sequence[int]
    ) -> tuple[list[str], socket.socket, socket.socket]:
        """Docker's ``exec`` cannot hand descriptors over: the command runs behind the relay instead, whose
        connections come back through a socket in the private folder."""
        if isinstance(command, str) or len(pass_fds) != 1:
            raise EnvironmentUnavailable(f"{box.flavour} relays one passed descriptor, to an argv command")
        from ._relay import RELAY, serve

        path = box.io / f"{rid}.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        folder = os.open(box.io, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:  # bound through the folder's descriptor: a short name, whatever the folder's path
            listener.bind(f"/proc/self/fd/{folder}/{path.name}")
        except OSError:
            listener.close()
            raise
        finally:
            os.close(folder)
        os.chmod(path, 0o666)  # the container's user connects; the folder above is private to hermes
        listener.listen(16)
        chan = socket.socket(fileno=os.dup(pass_fds[0]))
        serve(listener, chan)
        argv = [self.python, "-I", "-c", RELAY, f"{IO_PATH}/{rid}.sock", str(int(pass_fds[0])), *command]
        return argv, listener, chan

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
        from ..sandbox._capture import HeadTail, drain

        box = self._ensure()
        start_in = self._workdir(workdir)
        call_env = dict(env or {})
        rid = run_id()
        relayed: tuple[socket.socket, socket.socket] | None = None
        if pass_fds and box.flavour != "podman":
            command, *sockets = self._relay(box, rid, command, pass_fds)
            relayed, pass_fds = (sockets[0], sockets[1]), ()
        state_in, state_out = self._state_files(box, rid, command, start_in, call_env)
        inner = launch_argv(
            command,
            state_in=state_in,
            state_out=state_out,
            control=f"{IO_PATH}/{rid}.ctl",
            merge=not split_output,
            workdir=start_in or self._workspace,
            limits=limits,
            fds=pass_fds,
        )
        argv_env = {} if isinstance(command, str) else call_env
        argv = [
            *self._exec_argv(box, stdin=input is not None, tty=False, env=argv_env, fds=len(pass_fds)),
            *inner,
        ]
        cap = (limits.max_output_bytes if limits is not None else None) or DEFAULT_OUTPUT_BYTES
        out, err = HeadTail.of(cap), HeadTail.of(stderr_bytes or cap)
        began = time.monotonic()
        try:
            popen = _spawn(
                argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL, fds=pass_fds
            )
            readers = [
                threading.Thread(target=drain, args=(popen.stdout, out), daemon=True),
                threading.Thread(target=drain, args=(popen.stderr, err), daemon=True),
            ]
            if input is not None:
                readers.append(threading.Thread(target=_feed, args=(popen, input), daemon=True))
            for thread in readers:
                thread.start()
            timed_out, note = False, ""
            try:
                popen.wait(timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                note = self._end_run(box, rid, popen)
            for thread in readers:
                thread.join(5)
            control = parse_control(_read(box.io / f"{rid}.ctl"))
            dump = _read(box.io / f"{rid}.out") if state_out else b""
        finally:
            for sock in relayed or ():
                sock.close()
            for name in (f"{rid}.in", f"{rid}.out", f"{rid}.ctl", f"{rid}.sock"):
                with contextlib.suppress(OSError):
                    (box.io / name).unlink()
        if control.pid is None and not timed_out:
            box.removed = inspect(box.engine, box.name) is None
            raise EnvironmentUnavailable(
                f"{box.flavour} exec failed: {err.text().strip() or popen.returncode}"
            )
        killed = timed_out or control.exit_code is None
        notes: tuple[str, ...] = ()
        if isinstance(command, str) and self.shell is not None:
            notes = self.shell.update(dump, workdir=start_in, killed=killed, call_env=call_env)
        exit_code = (
            None if timed_out else (control.exit_code if control.exit_code is not None else popen.returncode)
        )
        output = out.text()
        if not split_output and err.total and not timed_out and control.exit_code is None:
            output += err.text()
        return CommandResult(
            exit_code=exit_code,
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

    def _end_run(self, box: Box, rid: str, popen: subprocess.Popen[bytes]) -> str:
        """End a command that ran out of time: its whole session in the container, then its client."""
        pid = None
        for _ in range(50):
            pid = parse_control(_read(box.io / f"{rid}.ctl")).pid
            if pid is not None or popen.poll() is not None:
                break
            time.sleep(0.05)
        note = self._end_session(box, pid, 2.0) if pid is not None else "killed (it had not started)"
        try:
            popen.wait(10)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()
        return note

    def _end_session(self, box: Box, pid: int | None, grace: float) -> str:
        if pid is None:
            return "killed"
        done = engine_run([box.engine, "exec", box.name, *kill_argv(pid, grace)], timeout=grace + 30)
        return kill_note(done.stdout)

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
        box = self._ensure()
        start_in = self._workdir(workdir)
        call_env = dict(env or {})
        rid = run_id()
        state_in, _ = self._state_files(box, rid, command, start_in, call_env)
        inner = launch_argv(
            command,
            state_in=state_in,
            control=f"{IO_PATH}/{rid}.ctl",
            merge=True,
            workdir=start_in or self._workspace,
            limits=limits,
        )
        argv_env = {} if isinstance(command, str) else call_env
        argv = [*self._exec_argv(box, stdin=True, tty=pty, env=argv_env, fds=0), *inner]
        master = slave = None
        if pty:
            from ._local_process import open_pty

            master, slave = open_pty()
        try:
            if slave is not None:
                popen = subprocess.Popen(
                    argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True, close_fds=True
                )
            else:
                popen = _spawn(argv, stdin=subprocess.PIPE, merge=True)
        except OSError:
            if master is not None:
                os.close(master)
            raise
        finally:
            if slave is not None:
                os.close(slave)

        def session() -> int | None:
            return parse_control(_read(box.io / f"{rid}.ctl")).pid

        def forget(proc: ClientProcess) -> None:
            with self._lock:
                self._live.discard(proc)
            for name in (f"{rid}.in", f"{rid}.ctl"):
                with contextlib.suppress(OSError):
                    (box.io / name).unlink()

        proc = ClientProcess(
            popen,
            master=master,
            session=session,
            end_session=lambda pid, grace: self._end_session(box, pid, grace),
            on_close=forget,
        )
        with self._lock:
            self._live.add(proc)
        return proc

    # -- files -------------------------------------------------------------------------------------------

    def local_path(self, path: str) -> Path | None:
        return self.files.local_path(self.absolute(path))

    def expand_user(self, path: str) -> str:
        if path == "~" or path.startswith("~/"):
            return self._ensure().home.rstrip("/") + path[1:]
        return path

    def host_view(self, path: str) -> str:
        for inside, host in [(m.path, m.host) for m in self.settings.mounts] + [
            (self._workspace, self._host_workspace)
        ]:
            if path == inside or path.startswith(inside.rstrip("/") + "/"):
                return host + path[len(inside.rstrip("/")) :]
        return path

    # -- lifecycle ---------------------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._lock:
            live = list(self._live)
        for proc in live:
            with contextlib.suppress(Exception):
                proc.close()
        box, self._box = self._box, None
        if box is not None:
            release(box)
        if self._files is not None:
            self._files.close()
        if self._sandbox is not None:
            self._sandbox.close()


def _exports(env: Mapping[str, str]) -> bytes:
    lines = "".join(
        f"export {name}={shlex.quote(value)}\n" for name, value in env.items() if name.isidentifier()
    )
    return lines.encode("utf-8", "surrogateescape")


def _read(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(64 * 1024 * 1024)
    except OSError:
        return b""


def _feed(popen: subprocess.Popen[bytes], data: bytes) -> None:
    stdin = popen.stdin
    if stdin is None:
        return
    with contextlib.suppress(OSError, ValueError):
        stdin.write(data)
    with contextlib.suppress(OSError, ValueError):
        stdin.close()


def _spawn(
    argv: list[str], *, stdin: int, fds: Sequence[int] = (), merge: bool = False
) -> subprocess.Popen[bytes]:
    """The engine's client, in a session of its own; ``fds`` become its descriptors 3, 4, ... (the launcher
    puts each back at its own number inside)."""
    preexec: Callable[[], None] | None = None
    keep: tuple[int, ...] = ()
    if fds:
        wanted = list(fds)
        keep = tuple(range(3, 3 + len(wanted)))

        def preexec() -> None:  # between fork and exec: only async-signal-safe calls
            moved = [os.dup(fd) for fd in wanted]
            for number, fd in zip(keep, moved, strict=True):
                os.dup2(fd, number)

    return subprocess.Popen(
        argv,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge else subprocess.PIPE,
        start_new_session=True,
        pass_fds=keep,
        preexec_fn=preexec,
    )


def _probe(settings: ContainerSettings) -> EnvironmentStatus:
    """Whether the engine answers and has the image (see ``ContainerEnvironment.probe``)."""
    if not settings.image:
        return _not_ready(
            "no image is configured",
            'set [environment.container] image = "NAME" to an image this machine has (podman images)',
        )
    found = find_engine(settings.engine)
    if found is None:
        return _not_ready(
            _missing_engine(settings.engine),
            "install podman and runc (Debian/Ubuntu: apt install podman runc) or Docker, or set "
            "[environment.container] engine to the CLI's path",
        )
    engine, flavour = found
    if settings.network == "proxy" and flavour != "podman":
        return _not_ready(
            f'network = "proxy" needs podman (it joins the sandbox\'s network namespace); {flavour} cannot',
            'use podman, or set [environment.container] network = "none"',
        )
    done = engine_run([engine, "version", "--format", "{{.Client.Version}}"], timeout=30)
    if done.returncode != 0:
        return _not_ready(
            f"{flavour} does not answer: {why(done)}",
            f"check that `{flavour} info` works (for docker: is the daemon running?)",
            detail=engine,
        )
    detail = f"{flavour} {done.stdout.strip()}, image {settings.image}"
    limitations = [
        "per command, the limits are ulimits (data size, CPU time, file size); memory, CPUs and processes "
        "are bounded for the whole container ([environment.container] memory_mb, cpus, pids_limit)",
        "the file tools reach the container's own files only with a rootful engine (the overlay folder "
        "on the host); a rootless engine shows them the workspace and the mounts",
    ]
    inspect = [engine, "image", "exists" if flavour == "podman" else "inspect", settings.image]
    if engine_run(inspect, timeout=30).returncode != 0:
        if settings.pull == "never":
            return _not_ready(
                f"the image {settings.image} is not on this machine and pull = never",
                f'build or import it ({flavour} build / {flavour} import), or set pull = "missing"',
                detail=detail,
            )
        limitations.insert(0, f"the image {settings.image} is not here yet: {flavour} pulls it on first use")
    return EnvironmentStatus(
        kind="container",
        ready=True,
        detail=detail,
        guarantees=_guarantees(settings),
        limitations=tuple(limitations),
    )


def _missing_engine(engine: str) -> str:
    if engine == "auto":
        return "neither podman nor docker is installed"
    return f"the container engine {engine!r} is not installed"


def _not_ready(reason: str, fix: str, *, detail: str = "") -> EnvironmentStatus:
    return EnvironmentStatus(
        kind="container", ready=False, detail=detail, reason=reason, fix=fix, files_ready=False
    )


def _guarantees(settings: ContainerSettings) -> tuple[str, ...]:
    network = {
        "none": "no network: the container has a loopback interface only",
        "proxy": "network only through hermes's proxy ([sandbox.network]: the allow-list, approvals, SSRF rules)",
        "host": 'the host\'s network (network = "host")',
        "bridge": 'the engine\'s bridge network (network = "bridge")',
    }[settings.network]
    kept = (
        "the container is kept when the session ends (persist = true) and reused next time"
        if settings.persist
        else "the container is removed when the "
        + ("session" if settings.scope == "session" else "last session of the workspace")
        + " ends"
    )
    return (
        f"commands and file tools run in a container of {settings.image}: its own file system, processes and users",
        f"the workspace is bind-mounted at {settings.workdir}; nothing else of the host is visible except the "
        "configured mounts",
        network,
        "a command that times out is ended inside the container with its whole process tree",
        kept,
    )
