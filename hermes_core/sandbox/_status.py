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


GUARANTEES: dict[str, tuple[str, ...]] = {
    "bwrap": (
        "only the system folders (read-only), the toolchains, the workspace and a private /tmp are visible",
        "$HOME outside the workspace, hermes's config, data, cache and plugins and /etc secrets are hidden",
        "own PID namespace: host processes are invisible and cannot be signalled or read",
        "own user namespace with no capabilities and no_new_privs, also when hermes runs as root",
        "every process of a call ends with it (setsid included), on timeout and when the system closes",
        "network off removes every interface but loopback",
    ),
    "landlock": (
        "the same file-system allow-list, enforced by the kernel (nothing outside it can be read or written)",
        "host process memory and environment are unreadable (Landlock's ptrace rule)",
        "signals to processes outside the sandbox are blocked from Landlock ABI 6 (kernel 6.12) on",
    ),
    "none": ("the environment is scrubbed and resource limits apply; nothing else is walled",),
}
LIMITATIONS: dict[str, tuple[str, ...]] = {
    "bwrap": ("network on shares the host's network, including services on 127.0.0.1",),
    "landlock": (
        "no PID namespace: host processes stay visible in /proc (command lines included)",
        "signals to host processes are NOT blocked below ABI 6",
        "nothing can be hidden inside a visible tree: a workspace holding hermes's folders is refused",
        "/tmp is replaced by a private folder in TMPDIR (one per tool system, not per call); programs that "
        "write to /tmp itself fail",
        "processes that detach (setsid) AND clear their environment can outlive a call when no cgroup exists",
        "network off blocks TCP only (ABI 4+), not UDP",
        "file metadata outside the allow-list (permissions, timestamps, extended attributes) can still be "
        "changed, and any path can be tested for existence; contents are protected",
    ),
    "none": (
        "no walls: commands can read, write and signal whatever the user running hermes can",
        "the command guard is the only protection",
    ),
}


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
        "guarantees": list(GUARANTEES.get(choice.name, ())),
        "limitations": list(LIMITATIONS.get(choice.name, ())),
    }
