"""The per-call cgroup: the whole tree's process cap and memory cap, its CPU time, and every one of its
processes (detached ones included), so they can all be counted and killed.

A cgroup (v2 with ``memory`` and ``pids`` delegated, or the v1 ``pids`` + ``memory`` hierarchies) is made
below the host's own cgroup when that is writable, joined by the command's launcher before it execs, and
removed once the tree is gone (a janitor thread retries while its last processes are being reaped).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import threading
import time
from pathlib import Path

from ._settings import Limits

__all__ = ["Cgroup", "cgroup_joiner", "cgroup_support"]

_MIB = 1024 * 1024
_counter = itertools.count(1)
_support: tuple[str, dict[str, Path], str] | None = None
_support_lock = threading.Lock()


def cgroup_joiner(files: list[Path]) -> list[str]:
    """A ``/bin/sh`` prefix that moves itself into the cgroups (their ``cgroup.procs`` files), then execs."""
    script = (
        'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'
    )
    return ["/bin/sh", "-c", script, "sh", str(len(files)), *map(str, files)]


def _own_cgroups() -> dict[str, str]:
    """Controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    out: dict[str, str] = {}
    try:
        text = Path("/proc/self/cgroup").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for name in controllers.split(",") if controllers else [""]:
            out[name] = path
    return out


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount point, root within the hierarchy, fs type, super options) of every cgroup mount."""
    out: list[tuple[str, str, str, set[str]]] = []
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        tail = right.split()
        if len(fields) < 5 or len(tail) < 3 or not tail[0].startswith("cgroup"):
            continue
        root, point = fields[3], fields[4].replace("\\040", " ")
        out.append((point, root, tail[0], set(tail[2].split(","))))
    return out


def _join(point: str, root: str, path: str) -> Path:
    rel = path[len(root) :] if root != "/" and path.startswith(root) else path
    return Path(point) / rel.lstrip("/")


def _writable(directory: Path) -> bool:
    return directory.is_dir() and os.access(directory, os.W_OK | os.X_OK)


def _sweep(directory: Path) -> None:
    """Remove cgroups left by hermes processes that are gone (a crash leaves them behind, empty)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if not entry.name.startswith("hermes-"):
                continue
            owner = entry.name.split("-")[1]
            if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)


def cgroup_support(refresh: bool = False) -> tuple[str, dict[str, Path], str]:
    """``(version, {controller: parent folder}, reason)``: version is "v2", "v1" or "" (none, with the reason)."""
    global _support
    with _support_lock:
        if _support is not None and not refresh:
            return _support
        own = _own_cgroups()
        mounts = _mounts()
        result: tuple[str, dict[str, Path], str] = ("", {}, "no cgroup file system is mounted")
        for point, root, fstype, _ in mounts:
            if fstype != "cgroup2" or "" not in own:
                continue
            parent = _join(point, root, own[""])
            try:
                delegated = set((parent / "cgroup.subtree_control").read_text().split())
            except OSError:
                delegated = set()
            if {"memory", "pids"} <= delegated and _writable(parent):
                result = ("v2", {"": parent}, "")
                break
            result = (
                "",
                {},
                f"the cgroup v2 folder {parent} is not writable or does not delegate memory and pids",
            )
        if not result[0]:
            found: dict[str, Path] = {}
            for point, root, fstype, options in mounts:
                if fstype != "cgroup":
                    continue
                for controller in ("pids", "memory", "cpuacct"):
                    if controller in options and controller in own:
                        found[controller] = _join(point, root, own[controller])
            if "pids" in found and "memory" in found and all(_writable(p) for p in found.values()):
                result = ("v1", found, "")
            elif found:
                result = ("", {}, result[2] + "; the cgroup v1 pids and memory folders are not writable")
        for folder in result[1].values():
            _sweep(folder)
        _support = result
        return result


class Cgroup:
    """One call's cgroup (in each hierarchy it needs). ``join`` runs in the child before exec."""

    def __init__(self, version: str, dirs: dict[str, Path], join_fds: list[int]) -> None:
        self.version = version
        self.dirs = dirs
        self._join_fds = join_fds

    @classmethod
    def create(cls, limits: Limits) -> Cgroup | None:
        """A fresh cgroup with ``limits`` applied, or None when cgroups are not available here."""
        version, parents, _ = cgroup_support()
        if not version:
            return None
        name = f"hermes-{os.getpid()}-{next(_counter)}"
        dirs: dict[str, Path] = {}
        fds: list[int] = []
        try:
            for controller, parent in parents.items():
                folder = parent / name
                folder.mkdir()
                dirs[controller] = folder
            group = cls(version, dirs, fds)
            group._apply(limits)
            for folder in dirs.values():
                fds.append(os.open(folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
            return group
        except OSError:
            for fd in fds:
                os.close(fd)
            for folder in dirs.values():
                with contextlib.suppress(OSError):
                    folder.rmdir()
            return None

    def _write(self, controller: str, name: str, value: str) -> None:
        folder = self.dirs.get(controller)
        if folder is not None and (folder / name).exists():
            (folder / name).write_text(value)

    def _read(self, controller: str, name: str) -> str:
        folder = self.dirs.get(controller)
        if folder is None:
            return ""
        try:
            return (folder / name).read_text()
        except OSError:
            return ""

    def _apply(self, limits: Limits) -> None:
        # the tree's memory cap leaves room above each process's own data limit, so a single process
        # runs out gracefully (MemoryError) before the cgroup's OOM killer steps in
        memory = (
            limits.memory_mb * _MIB + max(64 * _MIB, limits.memory_mb * _MIB // 4)
            if limits.memory_mb
            else None
        )
        if self.version == "v2":
            if limits.max_processes:
                self._write("", "pids.max", str(limits.max_processes))
            if memory:
                self._write("", "memory.max", str(memory))
                self._write("", "memory.swap.max", "0")
        else:
            if limits.max_processes:
                self._write("pids", "pids.max", str(limits.max_processes))
            if memory:
                self._write("memory", "memory.limit_in_bytes", str(memory))

    def join(self) -> None:
        """Move the calling process into the cgroup (meant for the child, between fork and exec)."""
        for fd in self._join_fds:
            os.write(fd, b"0")

    def procs_files(self) -> list[Path]:
        return [folder / "cgroup.procs" for folder in self.dirs.values()]

    def close_join_fds(self) -> None:
        for fd in self._join_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._join_fds.clear()

    def pids(self) -> list[int]:
        text = self._read("" if self.version == "v2" else "pids", "cgroup.procs")
        return [int(p) for p in text.split() if p.isdigit()]

    def hit_process_limit(self) -> bool:
        events = self._read("" if self.version == "v2" else "pids", "pids.events")
        for line in events.splitlines():
            key, _, value = line.partition(" ")
            if key == "max" and value.strip().isdigit() and int(value) > 0:
                return True
        return False

    def cpu_seconds(self) -> float | None:
        if self.version == "v2":
            for line in self._read("", "cpu.stat").splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
            return None
        raw = self._read("cpuacct", "cpuacct.usage").strip()
        return int(raw) / 1e9 if raw.isdigit() else None

    def oom_killed(self) -> bool:
        if self.version == "v2":
            text = self._read("", "memory.events")
            return any(line.startswith("oom_kill ") and line.split()[1] != "0" for line in text.splitlines())
        text = self._read("memory", "memory.oom_control")
        return any(line.startswith("oom_kill ") and line.split()[1] != "0" for line in text.splitlines())

    def kill_all(self) -> None:
        """SIGKILL every process of the cgroup (``cgroup.kill`` on v2 when the kernel has it)."""
        if self.version == "v2" and (self.dirs[""] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                self._write("", "cgroup.kill", "1")
                return
        for _ in range(20):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        """Remove the cgroup; while its last processes are still being reaped, a janitor thread retries."""
        self.close_join_fds()
        if not self._rmdir():
            _janitor.add(self)

    def _rmdir(self) -> bool:
        done = True
        for folder in self.dirs.values():
            try:
                folder.rmdir()
            except FileNotFoundError:
                continue
            except OSError:
                done = False
        return done


class _Janitor:
    """Retries removing cgroups whose processes were still exiting, off the caller's path (a few seconds)."""

    def __init__(self) -> None:
        self._pending: list[tuple[float, Cgroup]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, group: Cgroup) -> None:
        with self._lock:
            self._pending.append((time.monotonic() + 5.0, group))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="hermes-cgroup-janitor", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(0.05)
            with self._lock:
                pending, self._pending = self._pending, []
            keep = []
            for deadline, group in pending:
                if group._rmdir():
                    continue
                if time.monotonic() > deadline:
                    group.kill_all()  # stragglers past their call: end them, then the folder can go
                    group._rmdir()
                    continue
                keep.append((deadline, group))
            with self._lock:
                self._pending.extend(keep)
                if not self._pending:
                    self._thread = None
                    return


_janitor = _Janitor()
