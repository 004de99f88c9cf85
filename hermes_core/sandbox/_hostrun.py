"""Files the host runs later, outside every wall: git's config and hooks, a venv's ``*.pth`` and
``sitecustomize.py``, ``.envrc``, editor task files (``[sandbox] host_run``, default ``DEFAULT_HOST_RUN``).

Two layers keep a sandboxed command from planting code there:

- **read-only inside** (bwrap): every such file or folder that exists when a call starts is bound read-only
  over itself, as is the folder git's ``core.hooksPath`` names; ``git commit``, ``checkout`` and ``fetch``
  write none of them and keep working.
- **checked after the call** (both backends; the only layer under Landlock, which cannot keep a file inside a
  writable folder from being replaced): a host-run file the call created or changed is put back as it was
  when its content can run code (a ``.pth`` line starting with ``import``, a git config key that runs a
  program, any hook, ``sitecustomize.py``, an ``.envrc``, editor tasks...). New ones go to hermes's
  quarantine folder, changed ones get their old content back; ``RunResult.quarantined`` lists them. A new
  repository's ordinary config (``git init``, ``git clone``) is kept.

A background process that plants such a file after its call returned is checked when it is released.
``host_run_match`` tells the file tools (through the path guard, or an environment's own file operations)
whether a path is one of these files, so they ask before writing it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob
import os
import re
import shutil
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["Tripwire", "host_run_match", "host_run_paths"]

_MAX_FILES = 400
_MAX_BYTES = 512 * 1024
_GIT_RUNS = re.compile(
    r"^(include|includeif|filter|diff \S|merge \S|credential|gpg|sequence|uploadpack|receive|difftool|mergetool|"
    r"pager|alias|sendemail|remote \S+$)",
)
_CORE_RUNS = {"fsmonitor", "hookspath", "sshcommand", "pager", "editor", "askpass", "gitproxy",
              "alternaterefscommand", "worktree"}  # fmt: skip
_REMOTE_RUNS = {"uploadpack", "receivepack", "vcs", "proxy"}


_listings: dict[str, tuple[tuple[int, int], list[str]]] = {}


def _names(folder: str) -> list[str]:
    """The entries of ``folder``, listed again only when it changed (its inode or mtime)."""
    try:
        st = os.stat(folder)
    except OSError:
        return []
    stamp = (st.st_ino, st.st_mtime_ns)
    known = _listings.get(folder)
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    if len(_listings) > 4096:
        _listings.clear()
    _listings[folder] = (stamp, names)
    return names


def _expand(root: Path, pattern: str) -> list[Path]:
    """``pattern`` ("*" within a name, hidden names included) below ``root``: one ``stat`` per folder on a
    path whose listing is cached, so a call costs tens of microseconds, not a directory walk."""
    found = [str(root)]
    for part in pattern.split("/"):
        if not glob.has_magic(part):
            found = [f"{base}/{part}" for base in found if os.path.lexists(f"{base}/{part}")]
        else:
            found = [
                f"{base}/{name}" for base in found for name in _names(base) if fnmatch.fnmatchcase(name, part)
            ]
        if not found:
            return []
    return [Path(p) for p in found]


def _hooks_paths(root: Path) -> list[Path]:
    """Folders ``core.hooksPath`` names in ``root``'s git config, when they lie inside ``root``."""
    try:
        text = (root / ".git" / "config").read_text("utf-8", "replace")[:_MAX_BYTES]
    except OSError:
        return []
    out = []
    for match in re.finditer(r"(?im)^\s*hookspath\s*=\s*(.+?)\s*$", text):
        value = match.group(1).strip('"')
        target = Path(os.path.realpath(root / os.path.expanduser(value)))
        if target.is_relative_to(root) and target != root:
            out.append(target)
    return out


def host_run_paths(roots: Iterable[Path], patterns: Sequence[str]) -> list[Path]:
    """The host-run files and folders that exist now below ``roots`` (what bwrap binds read-only)."""
    found: list[Path] = []
    for root in roots:
        for pattern in patterns:
            found += [p for p in _expand(root, pattern) if not p.is_symlink()]
        found += _hooks_paths(root)
    return sorted(set(found))


def host_run_match(path: str | os.PathLike[str], roots: Iterable[Path], patterns: Sequence[str]) -> bool:
    """Whether ``path`` (absolute) is, or lies inside, a host-run file or folder below one of ``roots``."""
    text = os.path.realpath(os.fspath(path))
    for root in roots:
        base = str(root).rstrip("/") + "/"
        if not text.startswith(base):
            continue
        rel = text[len(base) :]
        for pattern in patterns:
            if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern + "/*"):
                return True
        for hooks in _hooks_paths(root):
            if text == str(hooks) or text.startswith(str(hooks) + "/"):
                return True
    return False


def _files(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            for folder, dirs, names in os.walk(path):
                dirs.sort()
                out += [Path(folder) / n for n in sorted(names)]
                if len(out) > _MAX_FILES:
                    return out
        elif path.is_file() or path.is_symlink():
            out.append(path)
    return out


def _signature(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)


def runs_code(path: Path, data: bytes) -> bool:
    """Whether this host-run file's content can make the host run something."""
    name = path.name
    text = data.decode("utf-8", "replace")
    if name.endswith(".pth"):
        return any(line.startswith(("import ", "import\t")) for line in text.splitlines())
    parts = path.parts
    if name == "config" and ".git" in parts and "hooks" not in parts:
        section = ""
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]").strip().lower().replace('"', "")
                if _GIT_RUNS.match(section) and not section.startswith("remote "):
                    return True
                continue
            key = line.split("=", 1)[0].strip().lower()
            if section == "core" and key in _CORE_RUNS:
                return True
            if section.startswith("remote ") and key in _REMOTE_RUNS:
                return True
            if section == "diff" and key == "external":
                return True
        return False
    return not ("hooks" in parts and name.endswith(".sample"))


class Tripwire:
    """Remembers the host-run files of ``roots`` before a call; ``check()`` after it puts back what changed."""

    def __init__(
        self, roots: Sequence[Path], patterns: Sequence[str], quarantine: Path, *, keep_content: bool = True
    ) -> None:
        """``keep_content=False`` where existing files cannot change (bwrap binds them read-only)."""
        self.roots = list(roots)
        self.patterns = tuple(patterns)
        self.quarantine = quarantine
        self.before: dict[Path, tuple[tuple[int, int, int, int] | None, bytes | None]] = {}
        self.found = host_run_paths(self.roots, self.patterns)  # what exists now (bwrap binds it read-only)
        for path in _files(self.found):
            signature = _signature(path)
            data = None
            if keep_content and signature is not None and path.is_file() and signature[1] <= _MAX_BYTES:
                with contextlib.suppress(OSError):
                    data = path.read_bytes()
            self.before[path] = (signature, data)

    def check(self) -> list[str]:
        """Undo what the call did to host-run files whose content runs code; returns what was undone."""
        undone: list[str] = []
        for path in _files(host_run_paths(self.roots, self.patterns)):
            signature = _signature(path)
            old = self.before.get(path)
            if old is not None and old[0] == signature:
                continue
            try:
                data = path.read_bytes()[: _MAX_BYTES + 1] if path.is_file() else b""
            except OSError:
                data = b""
            if not path.is_symlink() and not runs_code(path, data):
                continue
            if old is not None and old[1] is not None:
                with contextlib.suppress(OSError):
                    tmp = path.with_name(path.name + ".hermes-restore")
                    tmp.write_bytes(old[1])
                    os.replace(tmp, path)
                    undone.append(f"{path} (changed: its previous content is back)")
                    continue
            undone.append(f"{path} (created: moved to {self._quarantine(path)})")
        return undone

    def _quarantine(self, path: Path) -> Path:
        root = next((r for r in self.roots if path.is_relative_to(r)), path.parent)
        target = self.quarantine / time.strftime("%Y%m%d-%H%M%S") / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.move(str(path), str(target))
        except OSError:
            with contextlib.suppress(OSError):
                path.unlink()
        return target
