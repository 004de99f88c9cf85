"""``Sandbox``: runs commands behind the walls of one tool system (its workspace, config and backend)."""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..context import workspace_override
from ._capture import HeadTail, drain
from ._cgroup import Cgroup, cgroup_joiner
from ._env import child_env, git_identity
from ._hostrun import Tripwire, host_run_match
from ._layout import Layout, SandboxRefused, build_layout, hermes_dirs
from ._process import SandboxProcess
from ._rlimits import prlimit_argv, rlimit_setter, rlimit_values
from ._settings import Limits, SandboxSettings
from ._spawn import Spawner, feed, pidfd, wait_exit
from ._status import BackendChoice, choose_backend
from ._types import NetPlan, RunResult

if TYPE_CHECKING:
    from ._egress import NetworkApproval
    from ._netns import NetNamespace
    from ._proxy import EgressProxy

__all__ = ["DEFAULT_OUTPUT_BYTES", "Sandbox", "proxy_env"]

DEFAULT_OUTPUT_BYTES = 1_000_000
_POLL = 0.1
_MARKER = "HERMES_SANDBOX_RUN"
_SIGXCPU = 24
_OWN_CODE = Path(__file__).resolve().parents[1]  # the hermes_core package: never writable from inside


class Sandbox:
    """Runs commands inside walls made of the workspace (see ``hermes_core.sandbox``).

    Make one with ``sandbox_for(context)`` (per session, closed with it). ``run()`` runs a command to the
    end and returns a ``RunResult``; ``start()`` starts one and returns a ``SandboxProcess`` to manage.
    ``network_approval(host, reason) -> bool`` answers for names the network allow-list does not hold
    (``sandbox_for`` asks the tool system's approver; None: such names are refused).
    """

    def __init__(
        self,
        settings: SandboxSettings | None = None,
        *,
        workspace: str | os.PathLike[str] | None = None,
        hidden: Sequence[str | os.PathLike[str]] = (),
        tmp: str | os.PathLike[str] | None = None,
        network_approval: NetworkApproval | None = None,
    ) -> None:
        self.settings = settings if settings is not None else SandboxSettings()
        self.tmp = (
            Path(tmp) if tmp is not None else None
        )  # shown as /tmp to every call (else a fresh one each)
        self.network_approval = network_approval
        self._net: tuple[NetNamespace | None, EgressProxy] | None = None
        self._net_lock = threading.Lock()
        self.workspace = Path(workspace if workspace is not None else Path.cwd()).resolve()
        self._extra_hidden = [Path(os.path.realpath(p)) for p in hidden]
        self._choice: BackendChoice | None = None
        self._layouts: dict[tuple[Any, ...], Layout] = {}
        self._git: dict[str, str] | None = None
        self._live: set[SandboxProcess] = set()
        self._lock = threading.Lock()
        self._spawner = Spawner()
        self._closed = False
        _remember(self)

    def __repr__(self) -> str:
        return f"<Sandbox backend={self.choice.name or 'unavailable'} workspace={self.workspace}>"

    # -- what runs where ---------------------------------------------------------------------------------

    @property
    def choice(self) -> BackendChoice:
        """The backend this sandbox uses (probed once) and why."""
        if self._choice is None:
            self._choice = choose_backend(self.settings.backend)
        return self._choice

    @property
    def backend(self) -> str:
        """The backend's name ("bwrap", "landlock", "none"), or "" when none is usable."""
        return self.choice.name

    def hidden_paths(self) -> list[Path]:
        """Hermes's own folders (and the configured extras): never visible from inside."""
        return list(dict.fromkeys([*hermes_dirs(), *self._extra_hidden]))

    def layout(
        self,
        workspace: str | os.PathLike[str] | None = None,
        read_only: Sequence[str | os.PathLike[str]] = (),
        read_write: Sequence[str | os.PathLike[str]] = (),
    ) -> Layout:
        """The view a call in ``workspace`` gets (``read_only``/``read_write``: extra paths for this call).

        ``workspace`` defaults to the one ``calls_in_workspace`` set for the running call, else the sandbox's.
        """
        if workspace is None:
            workspace = workspace_override()  # a cron job's recorded workspace, for instance
        ws = Path(workspace).resolve() if workspace is not None else self.workspace
        home = Path(os.environ.get("HOME") or os.path.expanduser("~"))
        hidden = self.hidden_paths()
        key = (
            ws,
            tuple(map(str, read_only)),
            tuple(map(str, read_write)),
            str(home),
            os.environ.get("PATH", ""),
            tuple(hidden),
        )
        layout = self._layouts.get(key)
        if layout is None:
            layout = build_layout(
                workspace=ws,
                home=home,
                path_env=os.environ.get("PATH", ""),
                toolchains=self.settings.home_toolchains,
                extra_read_only=[*self.settings.read_only, *map(Path, read_only)],
                extra_read_write=[*self.settings.read_write, *map(Path, read_write)],
                protected_hidden=hidden,
                protected_read_only=[_OWN_CODE],
                tmp=self.tmp,
            )
            if not (read_only or read_write):  # views with one call's own paths are not worth keeping
                if len(self._layouts) > 32:
                    self._layouts.clear()
                self._layouts[key] = layout
        return layout

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment a command gets: harmless host variables, the configured ones, then ``extra``."""
        if self._git is None:
            self._git = git_identity(Path(os.path.expanduser("~")))
        env = child_env(
            os.environ, pass_env=self.settings.pass_env, config_env=self.settings.env, extra=extra
        )
        for key, value in self._git.items():
            env.setdefault(key, value)
        return env

    def is_host_run(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is a file the host runs later (``[sandbox] host_run``) in a writable root: code
        that writes files for this sandbox by other means (an environment's file operations) asks first."""
        layout = self.layout()
        return host_run_match(path, layout.read_write, self.settings.host_run)

    def limits(self, limits: Limits | None = None) -> Limits:
        """The configured limits with ``limits`` (the call's own) on top."""
        return self.settings.limits.merged(limits)

    # -- the network ---------------------------------------------------------------------------------------

    def egress(self) -> tuple[NetNamespace | None, EgressProxy]:
        """The sandbox's network namespace (None where none can be made: Landlock's fallback) and its proxy,
        made on the first call with network "on" and closed with the sandbox.

        Anything that runs commands for this sandbox may join the namespace (``namespace.enter_argv()`` as
        a launcher prefix, ``namespace.enterer()`` between fork and exec) and point tools at the proxy
        (``proxy_env(port)``): the namespace's only way out is the proxy, which applies ``[sandbox.network]``.
        """
        with self._net_lock:
            if self._net is not None:
                return self._net
            if self._closed:
                raise SandboxRefused("the tool system is closed")
            from ._egress import EgressPolicy
            from ._netns import NetNamespace, netns_support
            from ._proxy import EgressProxy

            namespace: NetNamespace | None
            try:
                namespace = NetNamespace.create()
            except SandboxRefused as err:
                if self.backend != "landlock":
                    raise SandboxRefused(
                        f'{err.message}; set [sandbox] network = "off" (or "host") to run commands '
                        "without the proxy"
                    ) from None
                namespace = None
                netns_support()  # remember why, for status
            if namespace is not None:
                listeners = namespace.listeners
            else:
                import socket

                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                listener.bind(("127.0.0.1", 0))
                listener.listen(128)
                listeners = [listener]
            proxy = EgressProxy(listeners, EgressPolicy(self.settings.egress, self.network_approval))
            self._net = (namespace, proxy)
            return self._net

    def _plan(self, mode: str) -> tuple[NetPlan, dict[str, str]]:
        """The network plan of a call in ``mode`` and the variables that point its tools at the proxy."""
        if mode != "on" or self.backend == "none":
            return NetPlan("off" if mode == "off" else "host"), {}
        namespace, proxy = self.egress()
        port = namespace.port if namespace is not None else proxy.port
        plan = NetPlan("proxy", namespace=namespace, proxy_port=None if namespace is not None else port)
        return plan, proxy_env(port)

    # -- starting ----------------------------------------------------------------------------------------

    def start(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        workspace: str | os.PathLike[str] | None = None,
        env: dict[str, str] | None = None,
        limits: Limits | None = None,
        network: bool | str | None = None,
        tool: str | None = None,
        stdin: int | IO[Any] | None = subprocess.DEVNULL,
        stdout: int | IO[Any] | None = subprocess.PIPE,
        stderr: int | IO[Any] | None = subprocess.STDOUT,
        read_only: Sequence[str | os.PathLike[str]] = (),
        read_write: Sequence[str | os.PathLike[str]] = (),
        background: bool = False,
        pass_fds: Sequence[int] = (),
    ) -> SandboxProcess:
        """Start ``argv`` in the sandbox and return its ``SandboxProcess`` (call ``release()`` when done with it).

        ``cwd`` defaults to the workspace; ``network`` ("on", "off", "host"; True is "on", False "off") to the
        configuration's choice for ``tool``;
        ``background=True`` ties the process to the sandbox's lifetime rather than the calling thread's;
        ``pass_fds`` are descriptors the command inherits (a channel of the caller's own, say).
        Raises ``SandboxRefused`` (a ``ToolError``) when the walls cannot be built, ``OSError`` when the
        command cannot be started.
        """
        if self._closed:
            raise SandboxRefused("the tool system is closed")
        choice = self.choice
        if choice.backend is None:
            raise SandboxRefused(choice.reason)
        if not argv:
            raise ValueError("argv is empty")
        layout = self.layout(workspace, read_only, read_write)
        workdir = Path(os.path.realpath(cwd)) if cwd is not None else layout.workspace
        lim = self.limits(limits)
        mode = _mode(self.settings.network_for(tool) if network is None else network)
        plan, proxy_vars = self._plan(mode)
        child = self.env(env)
        child.update(proxy_vars)
        if env:  # the call's own variables win, even over the proxy's (NO_PROXY="" for instance)
            child.update({str(k): str(v) for k, v in env.items()})
        if "PATH" in child:  # entries the command cannot see would only fail (Landlock: "permission denied")
            child["PATH"] = os.pathsep.join(
                entry
                for entry in child["PATH"].split(os.pathsep)
                if entry and layout.sees(Path(os.path.realpath(entry)))
            )
        marker: bytes | None = None
        if not choice.backend.pid_namespace:
            token = secrets.token_hex(8)
            child[_MARKER] = token
            marker = f"{_MARKER}={token}".encode()
        host_run = self.settings.host_run if choice.name != "none" else ()
        tripwire = (
            Tripwire(layout.read_write, host_run, _quarantine(), keep_content=choice.name != "bwrap")
            if host_run
            else None
        )
        pinned: list[Path] = tripwire.found if tripwire is not None and choice.name == "bwrap" else []
        launch = choice.backend.prepare(
            layout,
            list(argv),
            workdir,
            child,
            plan,
            reuse=not (read_only or read_write),
            unix_sockets=self.settings.unix_sockets,
            read_only_files=pinned,
        )
        need_cgroup = not launch.pid_namespace or bool(lim.max_processes or lim.memory_mb or lim.cpu_seconds)
        cgroup = Cgroup.create(lim) if need_cgroup else None
        values = rlimit_values(lim, with_cgroup=cgroup is not None)
        argv_out = list(launch.argv)
        steps: list[Callable[[], None]] = []
        limiter = prlimit_argv(values) if not launch.preexec and len(values) > 1 else None
        if launch.preexec or (limiter is None and len(values) > 1):
            # the child runs Python before exec anyway (Landlock), or there is no prlimit: do it all there
            steps = [cgroup.join] if cgroup is not None else []
            steps += [rlimit_setter(values), *launch.preexec]
        else:
            if limiter is not None:
                argv_out[launch.command_at : launch.command_at] = limiter
            if cgroup is not None:
                argv_out = cgroup_joiner(cgroup.procs_files()) + argv_out

        def preexec() -> None:
            for step in steps:
                step()

        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                argv_out,
                cwd=launch.cwd,
                env=launch.env,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
                preexec_fn=preexec if steps else None,
                pass_fds=[*launch.pass_fds, *pass_fds],
            )

        try:
            popen = self._spawner.call(spawn) if background else spawn()
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            for step in (*launch.after_spawn, *launch.cleanup):
                with contextlib.suppress(Exception):
                    step()
            raise
        finally:
            if cgroup is not None:
                cgroup.close_join_fds()
        for step in launch.after_spawn:
            with contextlib.suppress(Exception):
                step()
        proc = SandboxProcess(
            popen,
            backend=choice.name,
            pid_namespace=launch.pid_namespace,
            cgroup=cgroup,
            marker=marker,
            cleanup=launch.cleanup,
            on_release=self._forget,
            tripwire=tripwire,
        )
        with self._lock:
            self._live.add(proc)
        return proc

    def _forget(self, proc: SandboxProcess) -> None:
        with self._lock:
            self._live.discard(proc)

    # -- running to the end ------------------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        workspace: str | os.PathLike[str] | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = None,
        limits: Limits | None = None,
        network: bool | str | None = None,
        tool: str | None = None,
        input: bytes | None = None,
        split_output: bool = False,
        stderr_bytes: int | None = None,
        read_only: Sequence[str | os.PathLike[str]] = (),
        read_write: Sequence[str | os.PathLike[str]] = (),
        grace: float = 2.0,
        pass_fds: Sequence[int] = (),
    ) -> RunResult:
        """Run ``argv`` to the end (or ``timeout`` seconds) and return what it did; never leaves a process.

        Output is kept head and tail up to ``limits.max_output_bytes`` (default 1 MB); with ``split_output``
        stderr is kept apart (up to ``stderr_bytes``). A tree that hits a limit or the timeout is ended:
        SIGTERM, ``grace`` seconds, then SIGKILL.
        """
        lim = self.limits(limits)
        started = time.monotonic()
        floor = _Floor(self.layout(workspace).workspace, lim.min_free_mb)
        proc = self.start(
            argv,
            cwd=cwd,
            workspace=workspace,
            env=env,
            limits=lim,
            network=network,
            tool=tool,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if split_output else subprocess.STDOUT,
            read_only=read_only,
            read_write=read_write,
            pass_fds=pass_fds,
        )
        out = HeadTail.of(lim.max_output_bytes or DEFAULT_OUTPUT_BYTES)
        err = HeadTail.of(stderr_bytes or lim.max_output_bytes or DEFAULT_OUTPUT_BYTES)
        streams: list[tuple[IO[bytes], HeadTail]] = [(proc.stdout, out)] if proc.stdout else []
        if split_output and proc.stderr is not None:
            streams.append((proc.stderr, err))
        readers = [
            threading.Thread(target=drain, args=(stream, sink), daemon=True, name="hermes-sandbox-drain")
            for stream, sink in streams
        ]
        for reader in readers:
            reader.start()
        if input is not None and proc.popen.stdin is not None:
            threading.Thread(target=feed, args=(proc.popen.stdin, input), daemon=True).start()
        timed_out = False
        limit = kill_note = ""
        leftovers = False
        fd = pidfd(proc.pid)
        deadline = started + timeout if timeout else None
        try:
            while True:
                wait = _POLL
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                    if wait <= 0:
                        timed_out = True
                        kill_note = proc.terminate(grace)
                        break
                if wait_exit(proc.popen, fd, wait):
                    break
                limit = self._over_limit(proc, lim) or floor.crossed()
                if limit:
                    kill_note = proc.terminate(min(grace, 0.2))
                    break
        except BaseException:
            proc.terminate(0)
            proc.release()
            raise
        finally:
            if fd is not None:
                os.close(fd)
        try:
            # children that outlive the command keep its pipes open: a moment to finish, then they end
            for reader in readers:
                reader.join(0.25)
            if not (timed_out or limit):
                leftovers = proc.end_leftovers()
            if any(r.is_alive() for r in readers):
                proc.kill()
                for reader in readers:
                    reader.join(2.0)
            if not limit and proc.cgroup is not None and proc.cgroup.oom_killed():
                limit = "memory"
            if not limit and lim.cpu_seconds and proc.popen.returncode in (-_SIGXCPU, 128 + _SIGXCPU):
                limit = "cpu"
        finally:
            for stream, _ in streams:
                with contextlib.suppress(OSError):
                    stream.close()
            proc.release()
        killed = timed_out or bool(limit and kill_note)
        return RunResult(
            quarantined=list(proc.quarantined),
            exit_code=None if killed else proc.popen.returncode,
            output=out.text(),
            stdout=out.text(),
            stderr=err.text() if split_output else "",
            omitted=out.omitted,
            stderr_omitted=err.omitted if split_output else 0,
            duration=time.monotonic() - started,
            timed_out=timed_out,
            limit=limit,
            kill_note=kill_note,
            leftovers_killed=leftovers,
            backend=proc.backend,
        )

    def _over_limit(self, proc: SandboxProcess, lim: Limits) -> str:
        """The limit the tree is past ("processes", "cpu"), or ""."""
        if proc.cgroup is not None:
            if lim.max_processes and proc.cgroup.hit_process_limit():
                return "processes"
            used = proc.cgroup.cpu_seconds() if lim.cpu_seconds else None
            if used is not None and lim.cpu_seconds and used > lim.cpu_seconds:
                return "cpu"
            return ""
        if lim.max_processes and proc.process_count() > lim.max_processes:
            return "processes"
        return ""

    # -- lifecycle ---------------------------------------------------------------------------------------

    def live(self) -> list[SandboxProcess]:
        """The processes started here and not released yet."""
        with self._lock:
            return list(self._live)

    def close(self) -> None:
        """End every process still running in this sandbox and free what they held."""
        self._closed = True
        for proc in self.live():
            with contextlib.suppress(Exception):
                proc.terminate(0.5)
            with contextlib.suppress(Exception):
                proc.release()
        self._spawner.close()
        closer = getattr(self._choice.backend, "close", None) if self._choice is not None else None
        if callable(closer):
            closer()
        with self._net_lock:
            net, self._net = self._net, None
        if net is not None:
            net[1].close()
            if net[0] is not None:
                net[0].close()


class _Floor:
    """The free-space floor of one call: crossed when the workspace's file system drops below ``min_free_mb``
    free *because of the call* (a disk that was already fuller may lose another 64 MiB at most)."""

    def __init__(self, path: Path, min_free_mb: int | None) -> None:
        self.path = str(path)
        self.floor = 0
        self.checked = 0.0
        if min_free_mb:
            at_start = self._free()
            if at_start is not None:
                self.floor = min(min_free_mb * 1024 * 1024, max(0, at_start - 64 * 1024 * 1024))

    def _free(self) -> int | None:
        try:
            st = os.statvfs(self.path)
        except OSError:
            return None
        return st.f_bavail * st.f_frsize

    def crossed(self) -> str:
        if not self.floor:
            return ""
        free = self._free()
        return "disk" if free is not None and free < self.floor else ""


def _quarantine() -> Path:
    """Where host-run files planted by a call go (hermes's cache: hidden from every sandbox)."""
    from .. import paths

    return paths.cache_dir() / "quarantine"


def _mode(value: bool | str) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    if value not in ("on", "off", "host"):
        raise ValueError(f'network must be "on", "off" or "host", not {value!r}')
    return str(value)


def proxy_env(port: int) -> dict[str, str]:
    """The variables that send a command's HTTP(S), SOCKS and package-manager traffic to the proxy."""
    http = f"http://127.0.0.1:{port}"
    out = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY"):
        out[name] = out[name.lower()] = http
    out["ALL_PROXY"] = out["all_proxy"] = f"socks5h://127.0.0.1:{port}"
    out["NO_PROXY"] = out["no_proxy"] = "localhost,127.0.0.1,::1"
    out["NODE_USE_ENV_PROXY"] = "1"  # Node's own fetch honours the variables only when asked to
    return out


_open: weakref.WeakSet[Sandbox] = weakref.WeakSet()
_open_lock = threading.Lock()


def _remember(sandbox: Sandbox) -> None:
    """Track ``sandbox`` so what it started ends when the interpreter exits, even if nobody closed it."""
    with _open_lock:
        if not _open:
            atexit.unregister(_close_all)
            atexit.register(_close_all)
        _open.add(sandbox)


def _close_all() -> None:
    with _open_lock:
        boxes = list(_open)
    for box in boxes:
        with contextlib.suppress(Exception):
            box.close()
