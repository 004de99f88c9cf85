"""The life of the ``container`` kind's containers, through the engine's CLI: made (``run -d``, ``--init``, the
workspace bind-mounted, network, limits, user), found again when kept or shared, described (its root file system
on the host, its user, its fresh shell), and removed when the last session using it ends.

A container serves the environments that use it in this process (``Box.users``): one per session, or one per
workspace shared by its sessions. Kept containers (``persist``) are named after what they serve and found again
next time; one made from other settings (a digest in its labels) is replaced. Containers of sessions nobody
closed are removed when the process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._base import EnvironmentUnavailable
from ._container_settings import ContainerSettings
from ._shell import DEFAULT_OPTIONS_COMMAND

__all__ = [
    "IO_PATH",
    "NONCE",
    "Box",
    "Plan",
    "acquire",
    "container_name",
    "engine_run",
    "inspect",
    "release",
    "remove",
    "why",
]

IO_PATH = "/run/hermes"  # the private folder of shell states and control files, inside the container
_SETUP = DEFAULT_OPTIONS_COMMAND + '; id -u; id -g; printf "%s\\n" "${HOME:-/}"; compgen -e'
_ADMIN_TIMEOUT = 120.0

# (the --network arguments, the variables that point tools at a proxy, a label naming the namespace joined)
Network = tuple[list[str], dict[str, str], str]


def engine_run(argv: Sequence[str], timeout: float = _ADMIN_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Run one engine command to its end; ``EnvironmentUnavailable`` when the engine does not answer."""
    try:
        return subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired:
        raise EnvironmentUnavailable(
            f"{Path(argv[0]).name} {argv[1]} did not answer in {timeout:.0f}s"
        ) from None
    except OSError as exc:
        raise EnvironmentUnavailable(f"could not run {argv[0]}: {exc.strerror or exc}") from None


def why(done: subprocess.CompletedProcess[str]) -> str:
    """The last line the engine printed about a failure."""
    text = (done.stderr or done.stdout or "").strip().splitlines()
    return text[-1] if text else f"exit status {done.returncode}"


@dataclass(frozen=True, slots=True)
class Plan:
    """What a container is made from: its name, the engine, the settings, the host's workspace, the host folder
    for its private files, and how to get its network (only called when a container is made)."""

    name: str
    engine: str
    flavour: str
    settings: ContainerSettings
    workspace: str
    state_dir: Path
    network: Callable[[], Network]


@dataclass(slots=True)
class Box:
    """One running container, shared by the environments that use it (``users``)."""

    name: str
    engine: str
    flavour: str
    io: Path
    rootfs: Path | None
    uid: int
    gid: int
    defaults: tuple[str, str]
    home: str
    base_names: frozenset[str]
    persist: bool
    users: int = 0
    removed: bool = False


_boxes: dict[str, Box] = {}
_boxes_lock = threading.Lock()
NONCE = os.urandom(8).hex()  # this process's, in the names and labels of what only it may use


def container_name(settings: ContainerSettings, workspace: str, session_id: str) -> str:
    """Kept containers get a name from what they serve (found again next time); others one of their own."""
    parts = [workspace]
    if settings.scope == "session":
        parts.append(session_id)
    if not settings.persist:  # (a kept one keeps its name when its settings change: it is replaced)
        parts += [settings.digest(workspace), f"{os.getpid()}-{NONCE}"]
        if settings.scope == "session":
            parts.append(os.urandom(8).hex())  # two systems of this process may share a session id
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"hermes-{settings.scope}-{digest}"


def acquire(plan: Plan) -> Box:
    """The running container of ``plan``, made or found again; one more user of it."""
    with _boxes_lock:
        box = _boxes.get(plan.name)
        if box is None or box.removed:
            box = _make(plan)
            _boxes[plan.name] = box
        box.users += 1
        return box


def release(box: Box) -> None:
    """One user less; the last one removes the container (unless kept) and its private folder."""
    with _boxes_lock:
        box.users -= 1
        if box.users > 0:
            return
        _boxes.pop(box.name, None)
        box.removed = True
    if not box.persist:
        remove(box.engine, box.flavour, box.name, quiet=True)
        shutil.rmtree(box.io.parent, ignore_errors=True)


def remove(engine: str, flavour: str, name: str, *, quiet: bool = False) -> None:
    argv = [engine, "rm", "-f", *(["-t", "0"] if flavour == "podman" else []), name]
    done = engine_run(argv)
    if done.returncode != 0 and not quiet and "no such container" not in why(done).lower():
        raise EnvironmentUnavailable(f"could not remove the container {name}: {why(done)}")


def inspect(engine: str, name: str) -> tuple[bool, str, str] | None:
    """``(running, settings digest, namespace label)`` of the container ``name``, or None when there is none."""
    fmt = (
        '{{.State.Running}}|{{index .Config.Labels "hermes.config"}}|{{index .Config.Labels "hermes.netns"}}'
    )
    done = engine_run([engine, "container", "inspect", "--format", fmt, name], timeout=30)
    if done.returncode != 0:
        return None
    running, digest, netns = [*done.stdout.strip().split("|"), "", "", ""][:3]
    return running == "true", digest, netns


def _make(plan: Plan) -> Box:
    settings, name, engine = plan.settings, plan.name, plan.engine
    home = plan.state_dir / name
    io = home / "io"
    io.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    os.chmod(io, 0o777)  # the container's user writes its control files here; the folder above is private
    digest = settings.digest(plan.workspace)
    network, proxy_vars, netns = plan.network()
    reuse = settings.persist or settings.scope == "workspace"
    existing = inspect(engine, name) if reuse else None
    if existing is not None:
        running, label_digest, label_netns = existing
        if label_digest == digest and label_netns == netns:
            if not running:
                done = engine_run([engine, "start", name])
                if done.returncode != 0:
                    raise EnvironmentUnavailable(f"could not start the kept container {name}: {why(done)}")
            return _describe(plan, io)
        remove(engine, plan.flavour, name)
    elif not reuse:
        remove(engine, plan.flavour, name, quiet=True)
    argv = [engine, "run", "-d", "--name", name, f"--pull={settings.pull}"]
    argv += ["--label", "hermes.environment=container", "--label", f"hermes.config={digest}"]
    argv += ["--label", f"hermes.netns={netns}", "--label", f"hermes.workspace={plan.workspace}"]
    if settings.init:
        argv.append("--init")
    argv += network
    argv += ["-v", f"{plan.workspace}:{settings.workdir}", "-v", f"{io}:{IO_PATH}", "-w", settings.workdir]
    for mount in settings.mounts:
        argv += ["-v", f"{mount.host}:{mount.path}" + (":ro" if mount.read_only else "")]
    if settings.memory_mb:
        argv += ["--memory", f"{settings.memory_mb}m"]
    if settings.cpus:
        argv += ["--cpus", str(settings.cpus)]
    if settings.pids_limit:
        argv += ["--pids-limit", str(settings.pids_limit)]
    if settings.user:
        argv += ["--user", settings.user]
    for key, value in {**settings.env, **proxy_vars}.items():
        argv += ["-e", f"{key}={value}"]
    argv += [*settings.run_args, "--entrypoint", "sleep", settings.image, "2147483647"]
    done = engine_run(argv)
    if done.returncode != 0:
        raise EnvironmentUnavailable(
            f"{plan.flavour} could not start a container of {settings.image}: {why(done)}"
        )
    try:
        return _describe(plan, io)
    except BaseException:
        remove(engine, plan.flavour, name, quiet=True)
        raise


def _describe(plan: Plan, io: Path) -> Box:
    """What the running container is: its root file system on the host, its user, its fresh shell."""
    fmt = "{{.GraphDriver.Data.MergedDir}}"
    done = engine_run([plan.engine, "container", "inspect", "--format", fmt, plan.name], timeout=30)
    merged = Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None
    readable = merged is not None and os.access(merged, os.R_OK | os.X_OK) and merged.is_dir()
    setup = engine_run([plan.engine, "exec", plan.name, "bash", "--noprofile", "--norc", "-c", _SETUP], 60)
    lines = setup.stdout.splitlines()
    if setup.returncode != 0 or len(lines) < 5:
        raise EnvironmentUnavailable(
            f"the container of {plan.settings.image} cannot run bash ({why(setup)}): the container kind needs "
            "bash in the image"
        )
    return Box(
        name=plan.name,
        engine=plan.engine,
        flavour=plan.flavour,
        io=io,
        rootfs=merged if readable else None,
        uid=int(lines[2]),
        gid=int(lines[3]),
        defaults=(lines[0], lines[1]),
        home=lines[4],
        base_names=frozenset(lines[5:]),
        persist=plan.settings.persist,
    )


@atexit.register
def _remove_left_boxes() -> None:
    """Containers of sessions nobody closed (the process is ending) go with it, unless kept on purpose."""
    with _boxes_lock:
        left = [box for box in _boxes.values() if not box.persist and not box.removed]
        _boxes.clear()
    for box in left:
        argv = [box.engine, "rm", "-f", *(["-t", "0"] if box.flavour == "podman" else []), box.name]
        with contextlib.suppress(Exception):
            subprocess.run(argv, capture_output=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
        shutil.rmtree(box.io.parent, ignore_errors=True)
