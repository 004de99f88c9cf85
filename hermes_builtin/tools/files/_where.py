"""Where the file tools act: a path of the session's environment (``hermes_core.environments``), judged by the path
guard, resolved by the environment, and opened beneath its roots.

The guard judges the path as given and, when the environment resolves it elsewhere (its own ``/tmp``, a link),
the real path too; then every read and write goes through the environment, which refuses whatever lies outside
the workspace, the session's ``/tmp`` and the granted folders, even with the guard switched off. The resolved
path has no symbolic link left in it, and the environment opens it with none allowed, so a path swapped for a
link after the check fails instead of reaching elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO

from hermes_core import CallContext, ToolError

if TYPE_CHECKING:
    from hermes_core.environments import Environment

__all__ = ["Where", "locate", "outside_error", "shown"]


@dataclass(frozen=True, slots=True)
class Where:
    """A real path of ``env`` (``path``), and how the model sees it (``shown``: relative to the workspace)."""

    env: Environment
    path: str
    shown: str

    @property
    def pure(self) -> PurePosixPath:
        return PurePosixPath(self.path)

    def exists(self) -> bool:
        try:
            self.env.stat(self.path)
        except FileNotFoundError:
            return False
        return True

    def open(self) -> BinaryIO:
        """The regular file, open for reading (``OSError`` as the environment raises it)."""
        return self.env.open_read(self.path)

    @property
    def host(self) -> Path | None:
        """Where the file is (or would be) on this host, for checks that look at it there (the stale-write
        guard); None when the environment's files are not on this host's disk."""
        found = self.env.local_path(self.path)
        if found is not None:
            return found
        parent = self.env.local_path(str(self.pure.parent))
        return parent / self.pure.name if parent is not None else None

    def siblings(self) -> list[str]:
        try:
            return self.env.listdir(str(self.pure.parent))
        except OSError:
            return []


def shown(env: Environment, path: str) -> str:
    """How a path of ``env`` is shown to the model: relative to the workspace when inside it."""
    workspace = env.workspace.rstrip("/")
    if path == workspace:
        return "."
    if path.startswith(workspace + "/"):
        return path[len(workspace) + 1 :]
    return path


def locate(context: CallContext, path: str, op: str) -> Where:
    """``path`` (relative: to the workspace) in the session's environment, after the path guard allowed ``op``."""
    from hermes_core.environments import PathOutsideRoots, environment_for

    if not path or not path.strip():
        raise ToolError("path is empty")
    if "\x00" in path:
        raise ToolError("path contains a NUL byte")
    env = environment_for(context)
    absolute = env.absolute(os.path.expanduser(path))
    try:
        checked = context.guard_path(absolute, op)
    except OSError as exc:  # the guard could not even look at it (a /proc link of another process)
        raise ToolError(f"cannot check {path}: {exc.strerror or exc}; nothing was {_done(op)}") from None
    try:
        real = env.resolve(absolute)
    except PathOutsideRoots as exc:
        raise outside_error(exc, path, op) from None
    except OSError as exc:
        raise ToolError(f"cannot resolve {path}: {exc.strerror or exc}") from None
    if real != str(checked):
        context.guard_path(real, op)  # the environment sees it elsewhere: that is what gets opened
    return Where(env, real, shown(env, real))


def _done(op: str) -> str:
    return "read" if op == "read" else "written"


def outside_error(exc: OSError, shown_path: str, op: str) -> ToolError:
    """The message for a path the environment refuses: outside its roots, hidden, or read-only."""
    from hermes_core.environments import PathOutsideRoots

    verb = "read" if op == "read" else "written"
    why = getattr(exc, "why", "") or "it is outside the folders this session can reach"
    if isinstance(exc, PathOutsideRoots):
        return ToolError(
            f"{shown_path} cannot be {'read' if op == 'read' else 'written'}: {why} (the workspace, /tmp and "
            f"the folders the configuration grants); nothing was {verb}",
            kind="environment",
            retryable=False,
        )
    return ToolError(
        f"{shown_path} cannot be written: {why}; nothing was written", kind="environment", retryable=False
    )
