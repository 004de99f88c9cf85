"""``PathJudge``: ``check_path``'s verdicts for the many paths of one listing or search, at a fraction of the cost.

``check_path`` resolves every path from the root of the file system (``realpath``: an ``lstat`` per component,
three times over) and recomputes hermes's protected places and the home directory for each one; a listing of
10,000 files paid that 10,000 times. A judge does the per-call work once (the workspace and home resolved, the
protected roots computed) and resolves each directory once: a path's real location is its directory's, cached,
plus its name, after one ``lstat`` that tells whether the name itself is a symbolic link (then, and for any path
written with ``.``, ``..`` or ``//``, it is resolved in full as ``check_path`` does). The rules themselves are
``check_path``'s own (``_paths._classify``), so the verdicts are the same; a property test holds them equal.

The snapshot is per judge: make one per listing or search, not one per process.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

from ._paths import _classify, _inside, _real, _validate
from ._protected import protected_roots
from ._verdicts import MalformedPathError, PathVerdict

__all__ = ["PathJudge"]


class PathJudge:
    """Judges paths for ``op`` in ``workspace`` exactly as ``check_path(path, op, workspace)`` would."""

    __slots__ = ("_dirs", "_home", "_lexical_base", "_op", "_roots", "_spaces", "_ws")

    def __init__(self, op: Literal["read", "write"], workspace: str | os.PathLike[str] | None) -> None:
        if op not in ("read", "write"):
            raise ValueError(f"op must be 'read' or 'write', not {op!r}")
        self._op = op
        self._ws: str | None = None
        self._spaces: tuple[str, ...] = ()
        self._lexical_base = os.getcwd()
        if workspace is not None:
            self._ws = _real(os.fspath(workspace))
            self._lexical_base = os.fspath(workspace)
            self._spaces = (self._ws, os.path.abspath(self._lexical_base))
        self._home = _real(os.path.expanduser("~"))
        self._roots = protected_roots()
        self._dirs: dict[str, str] = {}  # a directory as named -> its real path

    def check(self, path: str | os.PathLike[str]) -> PathVerdict:
        """``check_path(path, op, workspace)``; ``MalformedPathError`` (a ``ValueError``) for a malformed path."""
        given = os.path.expanduser(_validate(path))
        joined = given if os.path.isabs(given) else os.path.join(self._ws or os.getcwd(), given)
        try:
            real = self._resolve(joined)
        except (OSError, ValueError) as exc:
            raise MalformedPathError(f"the path cannot be resolved: {exc}") from exc
        lexical = os.path.normpath(os.path.join(self._lexical_base, given))
        ws = self._ws
        decision, reason = _classify(
            real, self._op, self._home, ws, lexical or real, self._spaces, self._roots
        )
        inside = ws is not None and _inside(real, ws)
        return PathVerdict(decision, f"{self._op} {real}: {reason}", Path(real), self._op, inside)  # type: ignore[arg-type]

    def allowed(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``check(path)`` allows it (a malformed path is not allowed)."""
        try:
            return self.check(path).decision == "allow"
        except ValueError:
            return False

    def _resolve(self, joined: str) -> str:
        """``realpath(joined)``: the directory's real path from the cache, the name after one ``lstat``."""
        if joined.startswith("//") or os.path.normpath(joined) != joined:
            return _real(joined)  # ".", "..", "//": resolved step by step, as check_path does
        directory, name = os.path.split(joined)
        if not name:
            return _real(joined)
        try:
            if stat.S_ISLNK(os.lstat(joined).st_mode):
                return _real(joined)
        except FileNotFoundError:
            pass  # a name that does not exist (yet) stays as written, as realpath keeps it
        except OSError:
            return _real(joined)
        real_dir = self._dirs.get(directory)
        if real_dir is None:
            real_dir = self._dirs[directory] = _real(directory)
        return real_dir + name if real_dir.endswith("/") else f"{real_dir}/{name}"
