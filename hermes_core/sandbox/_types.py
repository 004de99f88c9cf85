"""Small shared types of the sandbox: how a backend launches a command, and what a finished call did."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Launch", "NetPlan", "RunResult"]


@dataclass(frozen=True, slots=True)
class NetPlan:
    """How one call reaches the network.

    ``mode`` is "off" (nothing but the call's own loopback), "proxy" (only hermes's proxy: ``namespace`` is the
    sandbox's ``NetNamespace`` to join, or, where none can be made, ``proxy_port`` is the one TCP port of the
    host's loopback the call may connect to) or "host" (the host's network, an explicit choice).
    """

    mode: str
    namespace: Any = None
    proxy_port: int | None = None


@dataclass(slots=True)
class Launch:
    """A backend's recipe for one process: the argv to run, and what to do around it.

    ``preexec`` runs in the child between fork and exec (async-signal-safe work only: pre-built values);
    ``after_spawn`` runs in the parent once the child exists (close descriptors it inherited);
    ``cleanup`` runs when the whole tree is gone (remove private folders); ``command_at`` is where the
    command itself starts in ``argv`` (after the backend's own launcher, if any); ``pass_fds`` are descriptors
    the launcher inherits (bwrap's seccomp program).
    """

    argv: list[str]
    env: dict[str, str]
    cwd: str
    pid_namespace: bool
    command_at: int = 0
    pass_fds: list[int] = field(default_factory=list)
    preexec: list[Callable[[], None]] = field(default_factory=list)
    after_spawn: list[Callable[[], None]] = field(default_factory=list)
    cleanup: list[Callable[[], None]] = field(default_factory=list)


@dataclass(slots=True)
class RunResult:
    """What a sandboxed command did.

    ``exit_code`` is None when the sandbox killed it (timeout or a limit); a command killed by a signal
    shows ``-N`` (backends without a PID namespace) or ``128+N`` (bwrap reports it as its exit status).
    ``output`` is stdout and stderr interleaved unless they were asked for apart (``stdout``/``stderr``).
    ``omitted`` counts bytes cut from the middle; ``limit`` names the limit that ended it ("processes",
    "memory", "cpu", "disk") and ``kill_note`` how it was ended; ``leftovers_killed`` says that processes outlived
    the command and were ended with it; ``quarantined`` names the host-run files it planted, now undone.
    """

    exit_code: int | None
    output: str
    stdout: str
    stderr: str
    omitted: int
    stderr_omitted: int
    duration: float
    timed_out: bool
    limit: str
    kill_note: str
    leftovers_killed: bool
    backend: str
    quarantined: list[str] = field(default_factory=list)
