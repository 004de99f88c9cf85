"""Process trees seen from the host through /proc: who descends from whom, who carries a marker, who is alive."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable

__all__ = ["alive", "descendants", "marked", "signal_all", "snapshot"]


def snapshot() -> dict[int, tuple[int, int]]:
    """``{pid: (parent pid, process group)}`` of every live (non-zombie) process."""
    out: dict[int, tuple[int, int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[0] not in (b"Z", b"X"):
            out[int(name)] = (int(fields[1]), int(fields[2]))
    return out


def descendants(root: int, table: dict[int, tuple[int, int]] | None = None) -> list[int]:
    """Live descendants of ``root`` (not ``root`` itself), parents before children."""
    table = snapshot() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out: list[int] = []
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop(0)
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def marked(marker: bytes, candidates: Iterable[int] | None = None) -> list[int]:
    """Live processes whose environment holds ``marker`` (``NAME=value``) at launch."""
    pids = candidates if candidates is not None else snapshot().keys()
    own = os.getpid()
    out = []
    for pid in pids:
        if pid == own:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if marker in env.split(b"\0"):
            out.append(pid)
    return out


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def group_alive(pgid: int) -> bool:
    """True while a live process has process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return any(group == pgid for _, group in snapshot().values())


SIGTERM = signal.SIGTERM
SIGKILL = signal.SIGKILL
