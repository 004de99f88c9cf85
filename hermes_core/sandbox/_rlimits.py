"""Per-process resource limits (rlimits) of a sandboxed call, and how they reach the command.

``prlimit`` (util-linux) applies them as a launcher, which lets Python spawn with vfork; without it they are
set between fork and exec. Root is exempt from RLIMIT_NPROC, so the process count of root's calls is bounded
by the call's cgroup or the runner's own count instead (see ``_cgroup``).
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable

from ._settings import Limits

__all__ = ["prlimit_argv", "rlimit_setter", "rlimit_values"]

_MIB = 1024 * 1024


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


def rlimit_values(limits: Limits, *, with_cgroup: bool) -> dict[int, int]:
    """The rlimits a call's processes get (soft = hard, so the command cannot raise them again; CPU time
    keeps one more second of hard limit, so SIGXCPU comes first)."""
    out = {resource.RLIMIT_CORE: 0}
    if limits.memory_mb:
        out[resource.RLIMIT_DATA] = limits.memory_mb * _MIB
        out[resource.RLIMIT_AS] = max(limits.memory_mb * 4, limits.memory_mb + 2048) * _MIB
    if limits.cpu_seconds:
        out[resource.RLIMIT_CPU] = limits.cpu_seconds
    if limits.max_file_mb:
        out[resource.RLIMIT_FSIZE] = limits.max_file_mb * _MIB
    if limits.max_processes and not with_cgroup and os.getuid() != 0:
        busy = _user_tasks()
        if busy:
            out[resource.RLIMIT_NPROC] = busy + 2 * limits.max_processes + 16
    return out


def rlimit_setter(values: dict[int, int]) -> Callable[[], None]:
    """A pre-exec function applying ``values`` (never above the current hard limit)."""
    current = {which: resource.getrlimit(which)[1] for which in values}
    pairs = []
    for which, value in values.items():
        hard = current[which]
        target = value if hard == resource.RLIM_INFINITY else min(value, hard)
        # CPU time: SIGXCPU at the soft limit says why; SIGKILL a second later if it is ignored
        top = target + 1 if which == resource.RLIMIT_CPU and hard == resource.RLIM_INFINITY else target
        pairs.append((which, (target, top)))

    def apply() -> None:
        for which, pair in pairs:
            resource.setrlimit(which, pair)

    return apply


_PRLIMIT_NAMES = {
    resource.RLIMIT_CORE: "core",
    resource.RLIMIT_DATA: "data",
    resource.RLIMIT_AS: "as",
    resource.RLIMIT_CPU: "cpu",
    resource.RLIMIT_FSIZE: "fsize",
    resource.RLIMIT_NPROC: "nproc",
}
_prlimit: list[str | None] = []


def prlimit_argv(values: dict[int, int]) -> list[str] | None:
    """``prlimit --data=S:H ... --`` applying ``values`` to the command it runs; None without ``prlimit``.

    Setting limits with a launcher rather than between fork and exec lets Python spawn with vfork: a
    ``preexec_fn`` forces a full fork of the host, which costs milliseconds per call in a large process.
    """
    if not _prlimit:
        import shutil

        _prlimit.append(shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin"))
    exe = _prlimit[0]
    if exe is None:
        return None
    args = [exe]
    for which, value in values.items():
        hard = resource.getrlimit(which)[1]
        soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
        top = soft + 1 if which == resource.RLIMIT_CPU and hard == resource.RLIM_INFINITY else soft
        args.append(f"--{_PRLIMIT_NAMES[which]}={soft}:{top}")
    return [*args, "--"]
