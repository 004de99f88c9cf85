"""Hermes's own state, which the agent may never change: config, approvals, data, cache, plugins and results.

``protected_roots()`` lists the directories and files, for ``HERMES_HOME`` and for the platform's default
directories both (a model could aim at the defaults while ``HERMES_HOME`` is set), whether they exist yet or
not. ``check_path`` refuses writes into any of them and reads of the configuration and approvals; the command
guard refuses commands that write, copy, move, link or delete into them (``command_findings`` and the path
risks of ``_targets``). The tools that own state under the data directory (memory, todo, kanban, cron,
sessions) write it with their own code, not through these guards, so they keep working.

When ``HERMES_HOME`` is set, everything in it is protected except a workspace that lies inside it (test
fixtures and some hosts keep the workspace there); its ``config.toml``, ``data``, ``cache`` and ``plugins``
are protected even then.

Each place is listed twice: as configured and with its symbolic links resolved. The resolved forms are cached
and computed again when a base directory changes (its inode or mtime, so an entry made, removed or renamed in
it counts) or the environment does. ``check_path`` resolves the path it judges; the command guard judges a
command's words by their text (the command has not run yet), against both forms.
"""

from __future__ import annotations

import contextlib
import functools
import os
import posixpath
import re
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._analyze import Analyzer, Ctx

__all__ = [
    "ProtectedRoot",
    "code_findings",
    "command_findings",
    "judge_path",
    "path_risk",
    "protect_path",
    "protected_reason",
    "protected_roots",
    "roots_snapshot",
]

_APP = "hermes"
_extra_files: set[str] = set()
_extra_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class ProtectedRoot:
    """One protected place: its absolute ``path`` (as configured or resolved), what it ``holds``, whether reads
    are refused too, and whether a workspace inside it is exempt (``HERMES_HOME`` as a whole)."""

    path: str
    holds: str
    no_read: bool = False
    workspace_exempt: bool = False


_O_PATH = getattr(os, "O_PATH", 0)
_PROC_FD = bool(_O_PATH) and os.path.isdir("/proc/self/fd")
_PLUGINS = "plugin folder (its files run at the next start)"
_CONFIG = "configuration and approvals"


def _real(path: str) -> str:
    """``os.path.realpath`` of an absolute, lexically normal path, asking the kernel: an ``O_PATH`` descriptor
    of the deepest existing ancestor and its ``/proc/self/fd`` link cost a few system calls instead of one
    ``lstat`` per component. A missing tail (the path does not exist yet) is kept as written."""
    path = os.path.abspath(os.path.expanduser(path))
    if _PROC_FD:
        probe, tail = path, []
        while True:
            try:
                fd = os.open(probe, _O_PATH | os.O_CLOEXEC)
            except (FileNotFoundError, NotADirectoryError):
                parent = os.path.dirname(probe)
                if parent == probe or os.path.islink(probe):  # a dangling link: realpath follows its text
                    break
                tail.append(os.path.basename(probe))
                probe = parent
                continue
            except OSError:
                break
            try:
                real = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                break
            finally:
                os.close(fd)
            if real.startswith("/") and not real.endswith(" (deleted)"):
                return posixpath.join(real, *reversed(tail)) if tail else real
            break
    real = os.path.realpath(path)
    return "/" + real.lstrip("/") if real.startswith("//") else real


def _lexical(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


def protect_path(path: str | os.PathLike[str]) -> None:
    """Protect one more file for the rest of the process (a configuration file given with ``--config``)."""
    global _extra_version
    with _extra_lock:
        _extra_files.add(_lexical(os.fspath(path)))
        _extra_version += 1


_extra_version = 0
_ENV_KEYS: tuple[str, ...] = ("HERMES_HOME", "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME")
if os.name != "posix":
    _ENV_KEYS += ("APPDATA", "LOCALAPPDATA", "USERPROFILE")
_Spec = tuple[str, str, bool, bool]  # lexical path, what it holds, reads refused, workspace exempt
_specs_memo: dict[tuple[object, ...], tuple[list[_Spec], list[str]]] = {}
_roots_memo: dict[tuple[object, ...], tuple[tuple[object, ...], list[ProtectedRoot]]] = {}


def _platform_dirs() -> list[tuple[str, str, bool]]:
    """The platform's directories (ignoring ``HERMES_HOME``), and the XDG defaults under ``~`` on top."""
    import platformdirs

    found = [
        (platformdirs.user_config_dir(_APP, appauthor=False), _CONFIG, True),
        (platformdirs.user_data_dir(_APP, appauthor=False), "data (state, plugins, results)", False),
        (platformdirs.user_cache_dir(_APP, appauthor=False), "cache", False),
    ]
    if os.name == "posix":
        found += [
            ("~/.config/" + _APP, _CONFIG, True),
            ("~/.local/share/" + _APP, "data (state, plugins, results)", False),
            ("~/.cache/" + _APP, "cache", False),
        ]
    return found


def _specs(key: tuple[object, ...]) -> tuple[list[_Spec], list[str]]:
    """The protected places as configured (lexical paths), and the base directories they hang from."""
    memo = _specs_memo.get(key)
    if memo is not None:
        return memo
    specs: list[_Spec] = []
    bases: list[str] = []
    home = os.environ.get("HERMES_HOME")
    if home:
        base = _lexical(home)
        bases.append(base)
        specs += [
            (posixpath.join(base, "config.toml"), _CONFIG, True, False),
            (posixpath.join(base, "plugins"), _PLUGINS, False, False),
            (posixpath.join(base, "data"), "data (state, results)", False, False),
            (posixpath.join(base, "cache"), "cache", False, False),
            (base, "home (HERMES_HOME)", True, True),
        ]
    with _extra_lock:
        specs += [(path, _CONFIG, True, False) for path in sorted(_extra_files)]
    for raw, holds, no_read in _platform_dirs():
        path = _lexical(raw)
        if path in bases or path == "/":
            continue
        bases.append(path)
        specs.append((path, holds, no_read, False))
        if holds.startswith("data"):
            specs.append((posixpath.join(path, "plugins"), _PLUGINS, False, False))
    _specs_memo[key] = (specs, bases)
    return specs, bases


def _fingerprint(bases: list[str]) -> tuple[object, ...]:
    """What the base directories are now: any entry made, removed or renamed in one changes its mtime, any
    swap changes the inode it resolves to."""
    out: list[object] = []
    for base in bases:
        try:
            st = os.stat(base)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_dev, st.st_ino, st.st_mtime_ns))
    return tuple(out)


def _compute_roots() -> list[ProtectedRoot]:
    with _extra_lock:
        version = _extra_version
    key = (*map(os.environ.get, _ENV_KEYS), version)
    specs, bases = _specs(key)
    stamp = _fingerprint(bases)
    memo = _roots_memo.get(key)
    if memo is not None and memo[0] == stamp:
        return memo[1]
    roots: dict[str, ProtectedRoot] = {}
    for path, holds, no_read, exempt in specs:
        for form in (path, _real(path)):  # as configured, and with every symlink resolved
            roots.setdefault(form, ProtectedRoot(form, holds, no_read, exempt))
    ordered = RootList(sorted(roots.values(), key=lambda r: -len(r.path)))
    if len(_roots_memo) > 64:
        _roots_memo.clear()
    _roots_memo[key] = (stamp, ordered)
    return ordered


class RootList(list[ProtectedRoot]):
    """The roots, with the tuple of their paths for a quick first test (``str.startswith`` of a tuple)."""

    def __init__(self, roots: list[ProtectedRoot]) -> None:
        super().__init__(roots)
        self.prefixes = tuple(r.path for r in roots)


_snapshot: ContextVar[list[list[ProtectedRoot] | None] | None] = ContextVar(
    "hermes_protected_roots", default=None
)


@contextlib.contextmanager
def roots_snapshot() -> Iterator[None]:
    """Compute ``protected_roots()`` at most once in the block (one command judged as a whole)."""
    token = _snapshot.set([None])
    try:
        yield
    finally:
        _snapshot.reset(token)


def protected_roots() -> list[ProtectedRoot]:
    """Every protected place, most specific first, each as configured and with its symlinks resolved."""
    box = _snapshot.get()
    if box is None:
        return _compute_roots()
    roots = box[0]
    if roots is None:
        roots = box[0] = _compute_roots()
    return roots


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def protected_reason(
    path: str,
    op: str,
    workspace: str | tuple[str, ...] | None = None,
    roots: list[ProtectedRoot] | None = None,
) -> str | None:
    """Why ``op`` ("read" or "write") on the absolute ``path`` is refused, or None when this rule allows it.

    ``workspace`` (one path, or its forms as given and resolved) exempts a workspace inside ``HERMES_HOME``;
    ``roots`` saves recomputing ``protected_roots()`` in a loop.
    """
    roots = protected_roots() if roots is None else roots
    if isinstance(roots, RootList) and not path.startswith(roots.prefixes):
        return None  # the common case: nowhere near hermes's state
    spaces = (workspace,) if isinstance(workspace, str) else (workspace or ())
    for root in roots:
        if not _inside(path, root.path):
            continue
        if root.workspace_exempt and any(_inside(path, ws) for ws in spaces):
            return None
        if op == "write":
            return f"hermes's own {root.holds}: the agent may not change it"
        if root.no_read:
            return f"hermes's own {root.holds}: the agent may not read it"
        return None  # the most specific root allows reading (data, cache, plugins)
    return None


def judge_path(
    lexical: str, real: str, op: str, workspace: tuple[str, ...], roots: list[ProtectedRoot] | None = None
) -> str | None:
    """``protected_reason`` for a path named ``lexical`` that resolves to ``real``: either form counts
    (``roots``: ``protected_roots()`` computed once for many paths)."""
    roots = protected_roots() if roots is None else roots
    reason = protected_reason(real, op, workspace, roots)
    if reason is None and lexical != real:
        reason = protected_reason(lexical, op, workspace, roots)
    return reason


# -- the command guard --------------------------------------------------------------------------------------

# Commands that only look at names, sizes or types: they may name any protected path.
_META = frozenset(
    {"ls", "dir", "vdir", "stat", "du", "test", "[", "[[", "realpath", "readlink", "basename", "dirname", "echo",
     "printf", "cd", "pushd", "popd", "chdir", "file", "true", ":"}
)  # fmt: skip
# Commands that read files and write nothing: they may read data, cache and plugins, not config or approvals.
_READERS = frozenset(
    {"cat", "tac", "nl", "head", "tail", "less", "more", "most", "wc", "grep", "egrep", "fgrep", "rg", "ag", "ack",
     "diff", "cmp", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum",
     "xxd", "hexdump", "od", "strings", "jq", "tree", "bat", "batcat", "view"}
)  # fmt: skip
# Writers whose write targets the rules judge (``write_risk``/``deletion_risk``): their sources may be read.
_RULED_WRITERS = frozenset({"cp", "mv", "install", "tee", "truncate", "rsync", "dd", "sponge"})
_FIND_WRITES = frozenset(
    {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
)
_EMBEDDED = re.compile(r"(?:^|[\s'\"=:,(])([~/][^\s'\"`;|&<>(),]*)")


def _candidates(word: str, scan_inside: bool) -> list[str]:
    """The texts of ``word`` that may be paths: itself, an option's value, and (for scripts) embedded paths."""
    out = [word]
    if "=" in word:
        out.append(word.split("=", 1)[1])
    if len(word) > 2 and word[0] == "-" and word[1].isalpha() and word[2] in "/~":
        out.append(word[2:])  # -o/path
    if scan_inside:
        out += _EMBEDDED.findall(word)
    return out


def _absolute(az: Analyzer, raw: str) -> str | None:
    """The lexical absolute path a command word names (joined to its ``cd`` and the workspace)."""
    from ._targets import UNKNOWN

    if not raw or UNKNOWN in raw or raw == "-":
        return None
    path = az.normalize(raw)
    if UNKNOWN in path:
        return None
    return _lexical(path)


@functools.lru_cache(maxsize=64)
def _spaces(workspace: str | None) -> tuple[str, ...]:
    """A workspace as given and resolved (a stale entry only narrows the ``HERMES_HOME`` exemption)."""
    if not workspace:
        return ()
    lexical = _lexical(workspace)
    real = _real(lexical)
    return (lexical,) if real == lexical else (lexical, real)


def _judge_word(
    raw: str, path: str, op: str, spaces: tuple[str, ...], roots: list[ProtectedRoot]
) -> str | None:
    """Judge a command's word by its text against the roots as configured and as resolved, without a system
    call per word: the command has not run, and a link it would follow is made by code the guard cannot see
    either (the file tools, which do resolve, and the sandbox are the walls for that)."""
    return protected_reason(path, op, spaces, roots)


def path_risk(path: str, workspace: str | None, raw: str | None = None) -> str | None:
    """Why writing (or deleting) a command's normalised target ``path`` (``~`` kept) is refused, else None."""
    path = _lexical(path) if path.startswith("~") else path
    if not path.startswith("/"):
        return None
    return _judge_word(raw if raw is not None else path, path, "write", _spaces(workspace), protected_roots())


def _hermes_config_set(name: str, argv: list[str]) -> bool:
    """``hermes [options] config set ...`` (or ``python -m hermes_core.cli ... config set``)."""
    if name != "hermes" and not (name.startswith("python") and "hermes_core.cli" in argv):
        return False
    words = [a.rsplit("/", 1)[-1] for a in argv[1:]]
    return "config" in words and "set" in words[words.index("config") + 1 :]


def command_findings(az: Analyzer, name: str, argv: list[str], ctx: Ctx) -> None:
    """Refuse (hardline) a command that names protected state in a way that may change it, or that reads the
    configuration or approvals; also any command but a look-only one run from inside protected state."""
    if name in _META:
        return
    if _hermes_config_set(name, argv):
        az.add("hermes_state", ctx.part, "changes hermes's own configuration (hermes config set)", True)
        return
    spaces = _spaces(az.workspace)
    roots = protected_roots()
    writes = name not in _READERS and name not in _RULED_WRITERS
    if name in ("find", "gfind") and not _FIND_WRITES.intersection(argv):
        writes = False
    if az.cwd and writes:
        where = _absolute(az, ".")
        reason = _judge_word("./", where, "write", spaces, roots) if where else None
        if reason:
            az.add("hermes_state", ctx.part, f"{name} runs inside {reason.split(':')[0]}", True)
            return
    scan_inside = name in ("sed", "gsed", "awk", "gawk", "mawk", "nawk", "perl", "ruby", "python", "python3")
    op = "write" if writes else "read"
    for word in argv[1:]:
        for candidate in _candidates(word, scan_inside):
            path = _absolute(az, candidate)
            reason = _judge_word(candidate, path, op, spaces, roots) if path else None
            if reason:
                verb = "may change" if writes else "reads"
                az.add("hermes_state", ctx.part, f"{name} {verb} {candidate} ({reason})", True)
                return


def code_findings(az: Analyzer, paths: list[str], part: str) -> None:
    """Refuse inline interpreter code that names protected state (it may write there)."""
    if not paths:
        return
    spaces = _spaces(az.workspace)
    roots = protected_roots()
    for raw in paths:
        path = _absolute(az, raw)
        reason = _judge_word(raw, path, "write", spaces, roots) if path else None
        if reason:
            az.add("hermes_state", part, f"interpreter code names {raw} ({reason})", True)
            return
