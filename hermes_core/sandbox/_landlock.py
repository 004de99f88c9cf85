"""The Landlock backend: the same file-system allow-list, enforced by the kernel without any helper binary.

The ruleset is built in the parent (ctypes, ABI read at run time); the child only sets ``no_new_privs``,
drops its capabilities when it runs as root, and restricts itself before ``exec``. What it cannot do,
compared with bwrap: there is no mount namespace (nothing can be *hidden* inside a visible tree, so a call
whose workspace holds hermes's folders is refused; ``/tmp`` is replaced by a private folder named in
``TMPDIR``, and programs that insist on ``/tmp`` itself fail; ``HOME`` is a private folder linking to the
visible toolchains), and there is no PID namespace (host processes
stay visible in ``/proc``; their environment and memory are protected by Landlock's ptrace rule, and
signals to them are blocked only from ABI 6, kernel 6.12, on). The host's ``/dev/shm`` is not in the
allow-list (POSIX shared memory and semaphores are unavailable rather than shared with the host).

The system-call filter (``_seccomp``) is installed last, after the ruleset. Network: "off" refuses IPv4 and
IPv6 sockets in the filter (and TCP in the ruleset from ABI 4); "on" joins the sandbox's network namespace
(``setns``) whose only exit is the proxy, or, where no namespace can be made, allows TCP connections to the
proxy's port only (ABI 4+) and refuses UDP in the filter. Landlock guards file contents and names, not
metadata: the mode, timestamps and extended attributes of a file outside the allow-list can still be changed
(the filter refuses set-user-ID and set-group-ID bits everywhere), and ``stat`` works on any path.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from ._layout import Layout, SandboxRefused, is_within
from ._seccomp import FilterUnavailable, Installer, filter_program
from ._types import Launch, NetPlan

__all__ = ["LandlockBackend", "probe_landlock"]

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_ABI1_ALL = (1 << 13) - 1
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPort(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc: ctypes.CDLL | None = None
_lock = threading.Lock()
_abi: tuple[int, str] | None = None


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.syscall.restype = ctypes.c_long
        lib.prctl.restype = ctypes.c_int
        _libc = lib
    return _libc


def probe_landlock(refresh: bool = False) -> tuple[int, str]:
    """``(ABI version, "")`` when Landlock is usable, else ``(0, reason)``. Cached per process."""
    global _abi
    with _lock:
        if _abi is not None and not refresh:
            return _abi
        if not sys.platform.startswith("linux"):
            _abi = (0, "Landlock exists only on Linux")
            return _abi
        lib = _lib()
        version = lib.syscall(
            _CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
        )
        if version < 1:
            err = ctypes.get_errno()
            if err == 38:  # ENOSYS
                reason = "the kernel has no Landlock (needs Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK)"
            elif err == 95:  # EOPNOTSUPP
                reason = (
                    "Landlock is built into the kernel but not enabled (add landlock to the lsm= boot option)"
                )
            else:
                reason = f"Landlock is not usable: {os.strerror(err)}"
            _abi = (0, reason)
        else:
            _abi = (int(version), "")
        return _abi


def _fs_rights(abi: int) -> int:
    rights = _ABI1_ALL
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class _Ruleset:
    """A Landlock ruleset under construction in the parent process."""

    def __init__(self, abi: int, tcp: str | int) -> None:
        """``tcp``: "any" (not restricted here), "none" (no TCP at all), or the one port ``connect`` may reach."""
        self.abi = abi
        self.handled = _fs_rights(abi)
        attr = _RulesetAttr(handled_access_fs=self.handled)
        size = 8
        if abi >= 4 and tcp != "any":
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
            size = 16
        if abi >= 6:
            attr.scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET
            size = 24
        fd = _lib().syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if fd < 0:
            raise SandboxRefused(f"Landlock refused the ruleset: {os.strerror(ctypes.get_errno())}")
        self.fd = int(fd)
        if isinstance(tcp, int) and abi >= 4:
            rule = _NetPort(allowed_access=NET_CONNECT_TCP, port=tcp)
            if (
                _lib().syscall(_ADD_RULE, self.fd, _RULE_NET_PORT, ctypes.byref(rule), ctypes.c_uint32(0))
                != 0
            ):
                err = ctypes.get_errno()
                os.close(self.fd)
                raise SandboxRefused(f"Landlock refused the proxy's port rule: {os.strerror(err)}")

    def allow(self, path: Path | str, rights: int) -> None:
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return  # vanished since the layout was made: nothing to allow
        try:
            is_dir = os.path.isdir(f"/proc/self/fd/{target}")
            allowed = rights & self.handled
            if not is_dir:
                allowed &= _FILE_RIGHTS
            rule = _PathBeneath(allowed_access=allowed, parent_fd=target)
            done = _lib().syscall(
                _ADD_RULE, self.fd, _RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)
            )
            if done != 0:
                raise SandboxRefused(f"Landlock refused a rule for {path}: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(target)

    def allow_except(self, root: Path, rights: int, excluded: list[Path]) -> None:
        """Allow ``root`` for reading, leaving out the ``excluded`` paths below it (listing stays allowed)."""
        inner = [e for e in excluded if is_within(e, root)]
        if not inner:
            self.allow(root, rights)
            return
        if root in inner:
            return
        self.allow(root, READ_DIR)
        try:
            children = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError:
            return
        for child in children:
            self.allow_except(Path(child.path), rights, inner)

    def restrictor(
        self, drop_caps: bool, last_cap: int, before: Callable[[], None] | None, seccomp: Installer
    ) -> Callable[[], None]:
        """The function the child runs before ``exec``: join the network namespace (``before``), no new
        privileges, no capabilities, the ruleset, then the system-call filter."""
        lib = _lib()
        fd = self.fd
        caps = range(last_cap + 1) if drop_caps else range(0)

        def restrict() -> None:
            if before is not None:
                before()
            if lib.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "no_new_privs")
            if drop_caps:
                lib.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
                for cap in caps:
                    lib.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
            if lib.syscall(_RESTRICT_SELF, fd, ctypes.c_uint32(0)) != 0:
                raise OSError(ctypes.get_errno(), "landlock_restrict_self")
            seccomp.install()

        return restrict

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _last_cap() -> int:
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 40


_RO = EXECUTE | READ_FILE | READ_DIR
_DEV = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV


def _private_home(private: Path, layout: Layout) -> Path:
    """A stand-in ``$HOME``: empty and writable, with links to the visible parts of the real one.

    Without a mount namespace the real home cannot be shown empty; a home that exists but cannot be read
    makes tools fail ("permission denied" on their dotfiles), so the command gets this one instead.
    """
    home = private / "home"
    home.mkdir()
    for path in [*layout.read_only, *layout.read_write]:
        if path != layout.home and is_within(path, layout.home):
            link = home / path.relative_to(layout.home)
            link.parent.mkdir(parents=True, exist_ok=True)
            if not os.path.lexists(link):
                link.symlink_to(path)
    return home


class LandlockBackend:
    """Restricts each command with a Landlock ruleset built once per view; commands get a private ``TMPDIR``
    and ``HOME`` (one per sandbox, shared by its calls, removed when it closes)."""

    name = "landlock"
    pid_namespace = False

    def __init__(self, abi: int) -> None:
        self.abi = abi
        # one ruleset (and private folder) per view: a ruleset can restrict any number of processes
        self._made: dict[tuple[int, str | int], tuple[Layout, _Ruleset, Path]] = {}
        self._installers: dict[tuple[str, bool], Installer] = {}
        self._lock = threading.Lock()

    def _ruleset(self, layout: Layout, tcp: str | int, reuse: bool) -> tuple[_Ruleset, Path]:
        key = (id(layout), tcp)
        with self._lock:
            made = self._made.get(key) if reuse else None
            if made is not None and made[0] is layout:
                return made[1], made[2]
            ruleset, private = self._build(layout, tcp)
            if reuse:
                if made is not None:
                    made[1].close()
                    shutil.rmtree(made[2], ignore_errors=True)
                self._made[key] = (layout, ruleset, private)
            return ruleset, private

    def _build(self, layout: Layout, tcp: str | int) -> tuple[_Ruleset, Path]:
        private = Path(tempfile.mkdtemp(prefix="hermes-sbx-"))
        ruleset = _Ruleset(self.abi, tcp)
        try:
            excluded = [*layout.etc_hidden, *layout.hidden]
            for path, target in layout.system:
                if target is None:
                    ruleset.allow_except(path, _RO, excluded)
            for path in layout.read_only:
                ruleset.allow_except(path, _RO, excluded)
            everything = _fs_rights(self.abi)
            for path in [*layout.read_write, private, *([layout.tmp] if layout.tmp else [])]:
                ruleset.allow(path, everything)
            for device in _DEVICES:
                ruleset.allow(device, _DEV)
            for folder in ("/dev/pts", "/dev/fd"):
                ruleset.allow(folder, _DEV | READ_DIR)
            ruleset.allow("/proc", READ_FILE | READ_DIR)
            (private / "tmp").mkdir()
            _private_home(private, layout)
        except BaseException:
            ruleset.close()
            shutil.rmtree(private, ignore_errors=True)
            raise
        return ruleset, private

    def prepare(
        self,
        layout: Layout,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        network: NetPlan,
        reuse: bool = True,
        unix_sockets: bool = False,
        read_only_files: Sequence[Path] = (),
    ) -> Launch:
        for hidden in layout.hidden:
            if not (hidden in layout.hermes or os.path.lexists(hidden)):
                continue  # a credential path that does not exist has nothing to leak
            if any(is_within(hidden, w) for w in layout.read_write):
                what = "hermes's own folder" if hidden in layout.hermes else "the credential path"
                raise SandboxRefused(
                    f"{what} {hidden} lies inside the writable tree, and Landlock cannot hide part of a "
                    "tree; use the bwrap backend or a workspace that does not contain it"
                )
        if not layout.sees(cwd):
            raise SandboxRefused(f"the working directory {cwd} is outside what the sandbox shows")
        enter: Callable[[], None] | None = None
        tcp: str | int = "any"
        inet = "all"
        if network.mode == "off":
            tcp, inet = "none", "none"
        elif network.mode == "proxy":
            if network.namespace is not None:
                enter = network.namespace.enterer()
            elif network.proxy_port is not None:
                tcp, inet = network.proxy_port, "stream"
        seccomp = self._installer(inet, unix_sockets)
        ruleset, private = self._ruleset(layout, tcp, reuse)
        child_env = dict(env)
        child_env["TMPDIR"] = str(layout.tmp or private / "tmp")
        child_env["HOME"] = str(private / "home")
        restrict = ruleset.restrictor(os.geteuid() == 0, _last_cap(), enter, seccomp)
        launch = Launch(argv=list(argv), env=child_env, cwd=str(cwd), pid_namespace=False, preexec=[restrict])
        if not reuse:  # a one-off view (paths of this call only): its ruleset and folders go with the call
            launch.after_spawn.append(ruleset.close)
            launch.cleanup.append(lambda: shutil.rmtree(private, ignore_errors=True))
        return launch

    def _installer(self, inet: str, unix_sockets: bool) -> Installer:
        key = (inet, unix_sockets)
        with self._lock:
            installer = self._installers.get(key)
            if installer is None:
                try:
                    program = filter_program(inet, unix_sockets)  # type: ignore[arg-type]
                except FilterUnavailable as exc:
                    raise SandboxRefused(str(exc)) from None
                installer = self._installers[key] = Installer(program)
            return installer

    def close(self) -> None:
        """Close the rulesets and remove the private folders (when the sandbox closes)."""
        with self._lock:
            made, self._made = self._made, {}
        for _, ruleset, private in made.values():
            ruleset.close()
            shutil.rmtree(private, ignore_errors=True)
