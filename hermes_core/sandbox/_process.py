"""A sandboxed process tree seen from the host: wait for it, count it, end all of it.

With a PID namespace (bwrap) the tree is bwrap's descendants and ends whenever bwrap does. Without one
(landlock, none) it is the process group, the descendants, the call's cgroup when there is one, and the
processes that still carry the call's environment marker, so a ``setsid`` child is found too (one that
also clears its environment escapes this last net when no cgroup is available; the docs say so).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable

from ._cgroup import Cgroup
from ._hostrun import Tripwire
from ._tree import SIGKILL, SIGTERM, descendants, marked, signal_all, snapshot

__all__ = ["SandboxProcess"]


class SandboxProcess:
    """A command started in the sandbox; ``stdout``/``stderr`` are its pipes when they were asked for.

    ``terminate()`` ends the whole tree (SIGTERM, a grace period, then SIGKILL) and ``release()`` frees what
    the call held (its cgroup, its private folders) once the tree is gone. ``pid`` is the host pid of the
    launcher (bwrap, or the command itself without a PID namespace).
    """

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        *,
        backend: str,
        pid_namespace: bool,
        cgroup: Cgroup | None,
        marker: bytes | None,
        cleanup: list[Callable[[], None]],
        on_release: Callable[[SandboxProcess], None] | None = None,
        tripwire: Tripwire | None = None,
    ) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.backend = backend
        self.pid_namespace = pid_namespace
        self.cgroup = cgroup
        self.marker = marker
        self.stdout = popen.stdout
        self.stderr = popen.stderr
        self._cleanup = cleanup
        self._on_release = on_release
        self._released = False
        self._lock = threading.Lock()
        self._tripwire = tripwire
        self.quarantined: list[str] = []  # host-run files the call planted, undone at release

    def __repr__(self) -> str:
        return f"<SandboxProcess pid={self.pid} backend={self.backend} returncode={self.popen.returncode}>"

    def poll(self) -> int | None:
        return self.popen.poll()

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the command (its first process) to exit; True when it has."""
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    # -- the tree ----------------------------------------------------------------------------------------

    def members(self, *, thorough: bool = True) -> list[int]:
        """Host pids of the tree's live processes (the launcher included)."""
        if self.cgroup is not None and not self.pid_namespace:
            # every process of the call is in its cgroup, detached or not: no /proc scan needed
            found = set(self.cgroup.pids())
            if self.popen.poll() is None:
                found.add(self.pid)
            found.discard(os.getpid())
            return sorted(found)
        table = snapshot()
        found = set(descendants(self.pid, table))
        if self.pid in table:
            found.add(self.pid)
        if not self.pid_namespace:
            found.update(pid for pid, (_, group) in table.items() if group == self.pid)
            if thorough and self.marker is not None:
                found.update(marked(self.marker, table.keys()))
        if self.cgroup is not None:
            found.update(pid for pid in self.cgroup.pids() if pid in table)
        found.discard(os.getpid())
        return sorted(found)

    def process_count(self) -> int:
        """How many processes the command has alive now (cheap: the cgroup, else the descendants)."""
        if self.cgroup is not None:
            return len(self.cgroup.pids())
        table = snapshot()
        count = len(descendants(self.pid, table)) + (self.pid in table)
        return max(0, count - 2) if self.pid_namespace else count

    def _inner(self) -> list[int]:
        """The command's own processes (with a PID namespace: without bwrap and its reaper)."""
        if not self.pid_namespace:
            return self.members()
        table = snapshot()
        reapers = {pid for pid, (parent, _) in table.items() if parent == self.pid}
        return [pid for pid in descendants(self.pid, table) if pid not in reapers]

    def has_leftovers(self) -> bool:
        """Whether some process of the tree is still alive."""
        if self.running:
            return True
        if self.pid_namespace:
            return False  # bwrap is gone, so its namespace and everything in it is gone too
        return bool(self.members())

    def terminate(self, grace: float = 2.0) -> str:
        """End the whole tree: SIGTERM, up to ``grace`` seconds, then SIGKILL. Returns what it did."""
        if not self.has_leftovers():
            self.popen.poll()
            return "already exited"
        if grace > 0:
            signal_all(self._inner(), SIGTERM)
            if not self.pid_namespace:
                with contextlib.suppress(OSError):
                    os.killpg(self.pid, SIGTERM)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                if not self.has_leftovers():
                    return "terminated (SIGTERM)"
                time.sleep(0.02)
        self.kill()
        return "killed (SIGTERM, then SIGKILL)" if grace > 0 else "killed (SIGKILL)"

    def kill(self) -> None:
        """SIGKILL every process of the tree at once and reap the launcher."""
        for _ in range(3):
            if self.cgroup is not None:
                self.cgroup.kill_all()
            pids = self.members()
            if not self.pid_namespace:
                with contextlib.suppress(OSError):
                    os.killpg(self.pid, SIGKILL)
            signal_all(pids, SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(2.0)
            if not self.has_leftovers():
                return

    def end_leftovers(self) -> bool:
        """After the command exited: kill what it left running; True when there was something."""
        if self.pid_namespace:
            return False
        left = self.members()
        if not left:
            return False
        self.kill()
        return True

    def undo_host_run(self) -> list[str]:
        """For a long-lived process between two of its jobs (a warm interpreter): undo the host-run files it
        planted so far, as ``release`` does at the end; returns what was undone (also added to ``quarantined``)."""
        if self._tripwire is None:
            return []
        undone = self._tripwire.check()
        self.quarantined += undone
        return undone

    def release(self) -> None:
        """Free the call's cgroup and private folders, and undo host-run files it planted (once, after the tree
        is gone: ``quarantined`` lists them)."""
        with self._lock:
            if self._released:
                return
            self._released = True
        if self._tripwire is not None:
            with contextlib.suppress(Exception):
                self.quarantined = self._tripwire.check()
        if self.cgroup is not None:
            self.cgroup.remove()
        for step in self._cleanup:
            with contextlib.suppress(Exception):
                step()
        if self._on_release is not None:
            self._on_release(self)
