"""Can commands start here? The answer the checks of the tools that run code give the model and the doctor.

``readiness(owner)`` asks the tool system's sandbox (made from its ``[sandbox]`` configuration) whether a command
could start in its workspace now: a usable backend and walls that can be built there. It is the one question a
tool's check asks, so an execution layer that grows (environments, remote kinds) answers it in one place.

A tool system's answer is kept across processes in ``sandbox-readiness.json`` in hermes's cache folder, keyed by
a digest of everything that decides it: the ``[sandbox]`` table, the workspace, ``HOME``, ``PATH`` and the
``HERMES_HOME``/``XDG_*`` variables (with the paths they resolve to), the interpreter, the uid and gid, the
kernel (release, version, LSMs, the user namespace and its uid map), the sysctls that let user namespaces be
made, the ``bwrap`` binary found on ``PATH`` (path, inode, size, mode, mtime) and this package's own files.
A changed key, or an answer older than an hour, probes again; so does any process that has loaded the sandbox
(it ran a command): there the answer is cheap, and it replaces a kept one that differs. A command that runs
builds its walls itself all the same, so a stale answer can only hide or show a tool, never run a command
without walls (it fails with the reason instead). Within a process, a system's answer is reused for a second (the
checks of one selection ask within milliseconds), unless the sandbox was loaded since.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._blake import blake2b
from ..fileio import which

__all__ = ["Readiness", "readiness"]

_CACHE_NAME = "sandbox-readiness.json"
_SANDBOX_MODULE = "hermes_core.sandbox._sandbox"
_CACHE_VERSION = 1
_CACHE_TTL = 3600.0  # seconds: bounds what the key cannot see (an AppArmor profile loaded since, say)
# what lets bwrap make its namespaces, and what Landlock needs from the kernel
_KERNEL_FILES = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/self/uid_map",
    "/sys/kernel/security/lsm",
)
# the modules whose code decides the answer: a new version (or an edit) probes again
_OWN_FILES = (
    "_ready.py",
    "_owner.py",
    "_bwrap.py",
    "_landlock.py",
    "_layout.py",
    "_sandbox.py",
    "_settings.py",
)
_INSTALL = "install bubblewrap (Debian/Ubuntu: apt install bubblewrap)"
_RECENT_SECONDS = 1.0
# system -> (the sandbox was loaded, when, its answer)
_recent: weakref.WeakKeyDictionary[Any, tuple[bool, float, Readiness]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, slots=True)
class Readiness:
    """``ok`` when commands can start; otherwise ``reason`` says why and ``fix`` what to change."""

    ok: bool
    reason: str = ""
    fix: str = ""

    def __bool__(self) -> bool:
        return self.ok


def _backend_fix(requested: str) -> str:
    if requested == "auto":
        return f'{_INSTALL}, or set [sandbox] backend = "none" to run commands without walls'
    if requested == "bwrap":
        return f'{_INSTALL}, or set [sandbox] backend = "auto" to use the strongest backend this machine has'
    return f'set [sandbox] backend = "auto" (or "bwrap" and {_INSTALL})'


def readiness(owner: Any) -> Readiness:
    """Whether a command can start in the sandbox of ``owner`` (a ``ToolSystem`` or a handler's ``context``).

    A tool system's answer comes from the cross-process cache when its key still holds (see the module
    docstring); a context's is worked out here (the backend probe is cached per process, the layout per sandbox).
    """
    cache_dir = getattr(owner, "cache_dir", None)
    if cache_dir is None or hasattr(owner, "call_id"):
        return assess(owner)
    # the checks of one selection (execute_code, terminal, process) ask within milliseconds of each other, and
    # working out the key costs ~0.7 ms: an answer is reused for a second while the sandbox stays (un)loaded
    loaded = _SANDBOX_MODULE in sys.modules
    now = time.monotonic()
    try:
        seen = _recent.get(owner)
    except TypeError:  # an owner that cannot be weakly referenced: asked anew each time
        seen = None
    if seen is not None and seen[0] == loaded and now - seen[1] < _RECENT_SECONDS:
        return seen[2]
    ready = _system_readiness(owner, Path(cache_dir))
    with contextlib.suppress(TypeError):
        _recent[owner] = (_SANDBOX_MODULE in sys.modules, now, ready)
    return ready


def _system_readiness(owner: Any, cache_dir: Path) -> Readiness:
    cache = cache_dir / _CACHE_NAME
    try:
        key = cache_key(owner)
    except (OSError, TypeError, ValueError):
        return assess(owner)
    kept = _cached(cache, key)
    if kept is not None and _SANDBOX_MODULE not in sys.modules:
        return kept
    # a process that has loaded the sandbox (it ran a command, or asked before) works the answer out itself:
    # cheap there (the probe is cached per process, the layout per sandbox), and it corrects a kept answer
    ready = assess(owner)
    if ready != kept:
        _keep(cache, key, ready)
    return ready


def assess(owner: Any) -> Readiness:
    """The answer of ``readiness`` worked out now: the sandbox's backend and its layout for the workspace."""
    from ._layout import SandboxRefused
    from ._owner import sandbox_for

    try:
        box = sandbox_for(owner)
    except SandboxRefused as err:
        return Readiness(
            False, f"commands cannot run: {err.message}", "fix the [sandbox] table of the config"
        )
    choice = box.choice
    if choice.backend is None:
        reason = choice.reason.partition("; install")[0].partition("; choose")[0]
        return Readiness(False, f"commands cannot run: {reason}", _backend_fix(choice.requested))
    try:
        box.layout()
    except SandboxRefused as err:
        return Readiness(
            False,
            f"commands cannot run in the workspace {box.workspace}: {err.message}",
            "run hermes from a project folder (or pass --workspace)",
        )
    return Readiness(True)


def cache_key(system: Any) -> str:
    """The digest of everything the readiness of ``system``'s sandbox depends on (see the module docstring)."""
    env = os.environ
    workspace = str(system.workspace)
    home = env.get("HOME") or os.path.expanduser("~")
    path_env = env.get("PATH")
    config = system.config
    # hermes's folders (hidden inside) come from HERMES_HOME, else the XDG folders; other HERMES_* variables
    # (which plugins load, say) decide nothing here, and one that changed each run would defeat the cache
    named = sorted((k, v) for k, v in env.items() if k == "HERMES_HOME" or k.startswith("XDG_"))
    here = Path(__file__).parent
    parts: list[object] = [
        _CACHE_VERSION,
        [_stamp(str(here / name)) for name in _OWN_FILES],
        config.data.get("sandbox"),
        str(config.path),
        str(system.data_dir),
        str(system.cache_dir),
        [workspace, os.path.realpath(workspace), home, os.path.realpath(home), path_env],
        [named, [os.path.realpath(v) for _k, v in named]],
        [sys.executable, sys.prefix, sys.base_prefix],
        [os.getuid(), os.geteuid(), os.getgid(), os.getegid()],
        list(os.uname()),
        [_read(name) for name in _KERNEL_FILES],
        _link("/proc/self/ns/user"),
        _stamp(which("bwrap", os.defpath if path_env is None else path_env)),
    ]
    text = json.dumps(parts, sort_keys=True, default=repr)
    return blake2b(text.encode(), digest_size=16).hexdigest()


def _cached(cache: Path, key: str) -> Readiness | None:
    try:
        data = json.loads(cache.read_text("utf-8"))
        if data["v"] != _CACHE_VERSION or data["key"] != key:
            return None
        if not 0 <= time.time() - float(data["at"]) < _CACHE_TTL:
            return None
        return Readiness(bool(data["ok"]), str(data["reason"]), str(data["fix"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None  # missing, stale or corrupt: probe again


def _keep(cache: Path, key: str, ready: Readiness) -> None:
    from ..fileio import atomic_write

    payload = {"v": _CACHE_VERSION, "key": key, "at": time.time()}
    payload.update(ok=ready.ok, reason=ready.reason, fix=ready.fix)
    try:  # a cache: losing it costs one probe, so no fsync
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(cache, json.dumps(payload), fsync=False)
    except OSError:
        pass


def _stamp(path: str | None) -> list[object] | None:
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return [path, None]
    return [path, os.path.realpath(path), st.st_ino, st.st_size, st.st_mode, st.st_uid, st.st_mtime_ns]


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(4096)
    except OSError:
        return None


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None
