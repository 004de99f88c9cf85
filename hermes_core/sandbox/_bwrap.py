"""The bubblewrap backend: new mount, PID, IPC, UTS (and optionally network) namespaces around each call.

The child's root is an empty tmpfs onto which ``Layout`` is mounted: system folders and toolchains
read-only, the workspace read-write, a private ``/tmp``, a minimal ``/dev``, its own ``/proc``. Hidden paths
inside visible ones are covered by an empty read-only tmpfs (folders) or ``/dev/null`` (files).
``--die-with-parent`` and the PID namespace end every descendant, ``setsid`` ones included, when the
command's first process exits or bwrap is killed.

Every sandbox also gets its own user namespace with every capability dropped (``--unshare-user --cap-drop
ALL``; bwrap sets ``no_new_privs``), whatever the host's uid: run as root, bwrap would otherwise keep the full
capability set inside, and ``open_by_handle_at``, ``mount -o remount,rw`` or ``mknod`` would reach the host.
The system-call filter (``_seccomp``) is loaded by bwrap just before the command starts (``--seccomp FD``).

Network: "off" is a namespace of the call's own (loopback only); "on" joins the sandbox's namespace, whose
only exit is the proxy (``nsenter`` before bwrap); "host" keeps the host's network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from ._layout import Layout, SandboxRefused, is_within
from ._seccomp import FilterUnavailable, filter_program, pipe_of
from ._types import Launch, NetPlan

__all__ = ["BwrapBackend", "probe_bwrap"]

# No capabilities inside, as root or not: a user namespace of its own and an empty capability set.
_PRIVILEGES = ("--unshare-user", "--cap-drop", "ALL")


_probe_lock = threading.Lock()
_probe_result: tuple[str | None, str] | None = None


def _userns_hint() -> str:
    """A sentence naming the kernel setting that blocks unprivileged user namespaces, when one does."""
    checks = (
        ("/proc/sys/kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone=0"),
        ("/proc/sys/user/max_user_namespaces", "0", "user.max_user_namespaces=0"),
        (
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "1",
            "kernel.apparmor_restrict_unprivileged_userns=1 (AppArmor)",
        ),
    )
    for path, bad, name in checks:
        try:
            if Path(path).read_text().strip() == bad:
                return f"; user namespaces are disabled here ({name})"
        except OSError:
            continue
    return ""


def probe_bwrap(refresh: bool = False) -> tuple[str | None, str]:
    """``(path to bwrap, "")`` when it can build a sandbox here, else ``(None, reason)``. Cached per process."""
    global _probe_result
    with _probe_lock:
        if _probe_result is not None and not refresh:
            return _probe_result
        exe = shutil.which("bwrap")
        if exe is None:
            result: tuple[str | None, str] = (
                None,
                "bwrap (bubblewrap) is not installed (Debian/Ubuntu: apt install bubblewrap)",
            )
        else:
            argv = [exe, *_PRIVILEGES, "--unshare-pid", "--unshare-ipc", "--unshare-net", "--die-with-parent"]
            argv += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
            try:
                done = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
            except (OSError, subprocess.TimeoutExpired) as exc:
                result = (None, f"bwrap could not be run: {exc}")
            else:
                if done.returncode == 0:
                    result = (exe, "")
                else:
                    err = done.stderr.decode("utf-8", "replace").strip().splitlines()
                    detail = err[-1] if err else f"exit code {done.returncode}"
                    result = (None, f"bwrap cannot create namespaces here ({detail}){_userns_hint()}")
        _probe_result = result
        return result


def _depth(path: Path) -> int:
    return len(path.parts)


class BwrapBackend:
    """Builds the bwrap command line for one call."""

    name = "bwrap"
    pid_namespace = True

    def __init__(self, exe: str) -> None:
        self.exe = exe

    def prepare(
        self,
        layout: Layout,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        network: NetPlan,
        reuse: bool = True,
        unix_sockets: bool = False,
        read_only_files: Sequence[Path] = (),
    ) -> Launch:
        if not layout.sees(cwd):
            raise SandboxRefused(f"the working directory {cwd} is outside what the sandbox shows")
        try:
            program = filter_program("all", unix_sockets)
        except FilterUnavailable as exc:
            raise SandboxRefused(str(exc)) from None
        prefix: list[str] = []
        if network.mode == "proxy":
            if network.namespace is None:
                raise SandboxRefused("the sandbox's network namespace is missing")
            prefix = network.namespace.enter_argv()
        args = [*prefix, self.exe, *_PRIVILEGES, "--die-with-parent", "--unshare-pid", "--unshare-ipc"]
        args += ["--unshare-uts", "--unshare-cgroup-try"]
        if network.mode == "off":
            args.append("--unshare-net")
        args += ["--dev", "/dev", "--proc", "/proc"]
        # (depth, order, args): shallow mounts first, so deeper ones land on top of them
        tmp = ["--bind", str(layout.tmp), "/tmp"] if layout.tmp is not None else ["--tmpfs", "/tmp"]
        ops: list[tuple[int, int, list[str]]] = [
            (1, 0, tmp),
            (2, 0, ["--tmpfs", "/var/tmp"]),
        ]
        for path, target in layout.system:
            if target is not None:
                ops.append((_depth(path), 1, ["--symlink", target, str(path)]))
            else:
                ops.append((_depth(path), 1, ["--ro-bind", str(path), str(path)]))
        for secret in layout.etc_hidden:
            ops.append((_depth(secret), 5, _mask(secret)))
        ops.append((_depth(layout.home), 0, ["--tmpfs", str(layout.home)]))
        for path in layout.read_write:
            ops.append((_depth(path), 2, ["--bind", str(path), str(path)]))
        for path in layout.read_only:
            ops.append((_depth(path), 3, ["--ro-bind", str(path), str(path)]))
        for path in [*layout.protected, *read_only_files]:
            ops.append((_depth(path), 4, ["--ro-bind", str(path), str(path)]))
        for path in layout.hidden:
            if not os.path.lexists(path):
                # hermes's own folders are made now when they would be writable from inside
                if path not in layout.hermes or not any(is_within(path, w) for w in layout.read_write):
                    continue
                path.mkdir(parents=True, exist_ok=True, mode=0o700)
            ops.append((_depth(path), 5, _mask(path)))
        ops.sort(key=lambda op: (op[0], op[1]))
        for _, _, op in ops:
            args += op
        seccomp = pipe_of(program)
        args += ["--seccomp", str(seccomp), "--chdir", str(cwd), "--"]
        launch = Launch(
            argv=[*args, *argv],
            env=env,
            cwd=str(cwd),
            pid_namespace=True,
            command_at=len(args),
            pass_fds=[seccomp],
        )
        launch.after_spawn.append(lambda: os.close(seccomp))
        return launch


def _mask(path: Path) -> list[str]:
    if path.is_dir() and not path.is_symlink():
        return ["--tmpfs", str(path), "--remount-ro", str(path)]
    return ["--ro-bind", "/dev/null", str(path)]
