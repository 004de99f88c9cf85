"""The process around ``hermes mcp serve``: a protocol-only stdout, no server that starts itself, no orphans.

- ``divert_stdio()``: from the first moment of a stdio server, fd 1 is stderr for everything but the protocol
  (a plugin's ``print()`` at import, a library's warning, a child's output can never corrupt the stream) and fd 0
  is ``/dev/null`` for everything but the protocol.
- A server that lists itself: ``hermes mcp serve`` puts its configuration in ``HERMES_MCP_SERVE_CHAIN`` (inherited by
  what it starts); a ``hermes mcp serve`` that finds its own configuration there was started, directly or not, by
  itself and refuses to run (``serving_itself``). The MCP client also refuses to start a stdio server whose
  command line is this very process's (``is_own_command``).
- ``end_children()``: after a SIGTERM or SIGINT, whatever this process started that is still running (MCP servers
  in their process groups, sandboxes) is ended by process group, so nothing is left to be reparented to PID 1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "CHAIN_ENV",
    "children",
    "divert_stdio",
    "end_children",
    "is_own_command",
    "marked_serving",
    "serving_itself",
]

CHAIN_ENV = "HERMES_MCP_SERVE_CHAIN"


def divert_stdio() -> tuple[int, int]:
    """Keep fds 0 and 1 for the protocol only: returns private copies of them (the wire), then points fd 0 at
    ``/dev/null`` and fd 1 at stderr, for the rest of the process."""
    sys.stdout.flush()
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    os.set_inheritable(wire_in, False)
    os.set_inheritable(wire_out, False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def _identity(config_path: Path) -> str:
    try:
        return str(config_path.expanduser().resolve())
    except OSError:
        return str(config_path)


def serving_itself(config_path: Path) -> bool:
    """True when a ``hermes mcp serve`` with this configuration is among this process's ancestors."""
    chain = os.environ.get(CHAIN_ENV, "")
    return _identity(config_path) in chain.split(os.pathsep) if chain else False


@contextlib.contextmanager
def marked_serving(config_path: Path) -> Iterator[None]:
    """Record, for every process started in the block, that this configuration is being served."""
    before = os.environ.get(CHAIN_ENV)
    chain = [p for p in (before or "").split(os.pathsep) if p]
    os.environ[CHAIN_ENV] = os.pathsep.join([*chain, _identity(config_path)])
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CHAIN_ENV, None)
        else:
            os.environ[CHAIN_ENV] = before


def _own_command_line() -> list[str]:
    try:
        raw = Path("/proc/self/cmdline").read_bytes()
        argv = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
    except OSError:
        argv = [sys.executable, *sys.argv]
    return argv


def _normal(argv: Sequence[str]) -> list[str]:
    if not argv:
        return []
    first = shutil.which(argv[0]) or argv[0]
    with contextlib.suppress(OSError):
        first = os.path.realpath(first)
    return [first, *argv[1:]]


def is_own_command(command: str, args: Sequence[str]) -> bool:
    """True when ``command args`` is this process's own command line, and this process serves MCP."""
    own = _own_command_line()
    if "serve" not in own or "mcp" not in own:
        return False
    wanted = _normal([command, *args])
    if wanted == _normal(own):
        return True
    # the console script runs as "python /path/hermes ...": compare without the interpreter
    return len(own) > 1 and wanted == _normal(own[1:])


def children() -> list[tuple[int, int]]:
    """``(pid, process group)`` of this process's live children."""
    me = os.getpid()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[1]) == me and fields[0] not in (b"Z", b"X"):
            out.append((int(name), int(fields[2])))
    return out


def end_children(grace: float = 2.0) -> list[int]:
    """SIGTERM every child (its whole process group when it leads one), SIGKILL what is left after ``grace``
    seconds; returns the pids it found."""
    found = children()
    own_group = os.getpgrp()

    def send(sig: int) -> None:
        for pid, group in found:
            with contextlib.suppress(OSError):
                if group == pid and group != own_group:
                    os.killpg(group, sig)
                else:
                    os.kill(pid, sig)

    if not found:
        return []
    send(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(pid) for pid, _ in found):
        time.sleep(0.05)
    send(signal.SIGKILL)
    for pid, _ in found:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
    return [pid for pid, _ in found]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")
