"""Which backend runs commands here, and why: the choice ``auto`` makes and what each backend guarantees."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ._bwrap import BwrapBackend, probe_bwrap
from ._cgroup import cgroup_support
from ._landlock import LandlockBackend, probe_landlock
from ._layout import Layout
from ._seccomp import seccomp_status
from ._types import Launch, NetPlan

__all__ = ["GUARANTEES", "LIMITATIONS", "Backend", "BackendChoice", "NoneBackend", "choose_backend", "report"]


class Backend(Protocol):
    name: str
    pid_namespace: bool

    def prepare(
        self,
        layout: Layout,
        argv: list[str],
        cwd: Any,
        env: dict[str, str],
        network: NetPlan,
        reuse: bool = True,
        unix_sockets: bool = False,
        read_only_files: Sequence[Path] = (),
    ) -> Launch: ...


class NoneBackend:
    """No walls: the command sees what the host user sees (an explicit choice only)."""

    name = "none"
    pid_namespace = False

    def prepare(
        self,
        layout: Layout,
        argv: list[str],
        cwd: Any,
        env: dict[str, str],
        network: NetPlan,
        reuse: bool = True,
        unix_sockets: bool = False,
        read_only_files: Sequence[Path] = (),
    ) -> Launch:
        return Launch(argv=list(argv), env=env, cwd=str(cwd), pid_namespace=False)


_COMMON = (
    "a system-call filter: no mount, handle-based opens, new user namespaces or setns, keyrings, io_uring, bpf, "
    "perf events, userfaultfd, device nodes, TIOCSTI, set-user-ID bits, and no AF_UNIX, AF_VSOCK or packet "
    "sockets (socketpair works)",
    "network on: only hermes's proxy is reachable (the [sandbox.network] allow-list and the package registries, "
    "approval for other names, the SSRF policy); network off: nothing; the host's loopback services and abstract "
    "sockets are unreachable in both",
    "limits on every call: processes, memory, CPU time, file size, output and a free-space floor",
)
GUARANTEES: dict[str, tuple[str, ...]] = {
    "bwrap": (
        "only the system folders (read-only), the toolchains, the workspace and a private /tmp and /dev/shm are "
        "visible",
        "$HOME outside the workspace, hermes's config, data, cache and plugins and /etc secrets are hidden",
        "own PID namespace: host processes are invisible and cannot be signalled or read",
        "own user namespace with no capabilities and no_new_privs, also when hermes runs as root",
        *_COMMON,
        "files the host runs later (git config and hooks, venv .pth and sitecustomize, .envrc, editor tasks) "
        "are read-only inside; new ones that run code are undone when the call ends",
        "every process of a call ends with it (setsid included), on timeout and when the system closes",
    ),
    "landlock": (
        "the same file-system allow-list, enforced by the kernel (nothing outside it can be read or written)",
        "host process memory and environment are unreadable (Landlock's ptrace rule)",
        "no capabilities and no_new_privs, also when hermes runs as root",
        *_COMMON,
        "the host's /dev/shm is out of reach",
        "files the host runs later that a call creates or changes so that they run code are undone when it ends",
        "signals to processes outside the sandbox are blocked from Landlock ABI 6 (kernel 6.12) on",
    ),
    "none": ("the environment is scrubbed and resource limits apply; nothing else is walled",),
}
# What each backend does not stop (documented, and tested as such).
LIMITATIONS: dict[str, tuple[str, ...]] = {
    "bwrap": (
        'network = "host" (an explicit choice) shares the host\'s network, 127.0.0.1 services included',
        "a background process that plants a host-run file after its call returned is undone only when it is "
        "released",
    ),
    "landlock": (
        "NOT STOPPED: host processes stay visible in /proc, command lines included (a token passed in argv is "
        "readable): no PID namespace",
        "NOT STOPPED: file metadata outside the allow-list (permissions, timestamps, extended attributes) can "
        "change, e.g. chmod 666 on a readable-by-owner file; set-user-ID bits are refused by the filter",
        "NOT STOPPED: host-run files can be replaced during a call (Landlock cannot protect a file inside a "
        "writable folder); they are undone when the call ends",
        "nothing can be hidden inside a visible tree: a workspace holding hermes's folders is refused",
        "/tmp is replaced by a private folder in TMPDIR (one per session, not per call; the file tools see it "
        "at its own path); programs that write to /tmp itself fail; POSIX shared memory (/dev/shm) is unavailable",
        "processes that detach (setsid) AND clear their environment can outlive a call when no cgroup exists",
    ),
    "none": (
        "no walls: commands can read, write and signal whatever the user running hermes can",
        "the command guard is the only protection",
    ),
}


def _landlock_gaps(abi: int) -> list[str]:
    """What Landlock does not stop on this machine besides the fixed list (its ABI, its namespaces)."""
    from ._netns import netns_support

    out = []
    if abi < 6:
        out.append(f"NOT STOPPED: signals to host processes (Landlock ABI {abi} < 6)")
    made, why = netns_support()
    if not made:
        if abi >= 4:
            out.append(
                f"no network namespace here ({why}): network on allows TCP to the proxy's port only and no UDP"
            )
        else:
            out.append(
                f"NOT STOPPED: no network namespace here ({why}) and Landlock ABI {abi} < 4: network on reaches "
                "the host's network over TCP (UDP and UNIX sockets are refused)"
            )
    return out


@dataclass(frozen=True, slots=True)
class BackendChoice:
    """The backend a configuration gets here: ``backend`` is None when none is usable (``reason`` says why)."""

    requested: str
    name: str
    reason: str
    backend: Backend | None


def choose_backend(requested: str) -> BackendChoice:
    """Resolve ``auto`` | ``bwrap`` | ``landlock`` | ``none`` to a usable backend, or explain why there is none."""
    if requested == "none":
        return BackendChoice(
            requested, "none", 'chosen in the configuration ([sandbox] backend = "none")', NoneBackend()
        )
    bwrap, bwrap_why = probe_bwrap() if requested in ("auto", "bwrap") else (None, "")
    if bwrap is not None:
        why = "the strongest backend available" if requested == "auto" else "chosen in the configuration"
        return BackendChoice(requested, "bwrap", why, BwrapBackend(bwrap))
    abi, landlock_why = probe_landlock() if requested in ("auto", "landlock") else (0, "")
    if abi:
        if requested == "auto":
            why = f"bwrap is unavailable ({bwrap_why}); Landlock ABI {abi} is the strongest left"
        else:
            why = f"chosen in the configuration (Landlock ABI {abi})"
        return BackendChoice(requested, "landlock", why, LandlockBackend(abi))
    reasons = "; ".join(r for r in (bwrap_why, landlock_why) if r)
    fix = (
        'install bubblewrap, or set [sandbox] backend = "none" to run commands without walls'
        if requested == "auto"
        else 'choose another [sandbox] backend (or "auto")'
    )
    return BackendChoice(requested, "", f"no sandbox backend is usable here: {reasons}; {fix}", None)


def report(requested: str) -> dict[str, Any]:
    """Everything ``hermes sandbox status`` and the doctor say: the choice, each backend, cgroups, guarantees."""
    choice = choose_backend(requested)
    bwrap, bwrap_why = probe_bwrap()
    abi, landlock_why = probe_landlock()
    version, folders, cgroup_why = cgroup_support()
    filter_ok, filter_why = seccomp_status()
    return {
        "configured": requested,
        "backend": choice.name or None,
        "reason": choice.reason,
        "backends": {
            "bwrap": {"available": bwrap is not None, "detail": bwrap or bwrap_why},
            "landlock": {
                "available": bool(abi),
                "detail": f"ABI {abi}" if abi else landlock_why,
            },
            "none": {"available": True, "detail": "no walls"},
        },
        "limits": {
            "cgroup": version or None,
            "detail": ", ".join(str(p) for p in folders.values())
            if version
            else f"{cgroup_why}; rlimits only",
        },
        "filter": {"available": filter_ok, "detail": filter_why or "libseccomp"},
        "guarantees": list(GUARANTEES.get(choice.name, ())),
        "limitations": [
            *LIMITATIONS.get(choice.name, ()),
            *(_landlock_gaps(abi) if choice.name == "landlock" else ()),
        ],
    }
