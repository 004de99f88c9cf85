"""The system-call filter every sandboxed command runs under (seccomp), on both backends.

It is built once per variant with libseccomp (through ``pyseccomp``, a ctypes binding of the same API as
libseccomp's own): libseccomp knows each architecture's system-call numbers, refuses foreign ABIs (32-bit
calls from a 64-bit process, x32) and emits the BPF program. The program's bytes are what both backends
load: bwrap reads them from a pipe (``--seccomp FD``) just before it runs the command, the Landlock backend
installs them between fork and exec (one ``prctl``, a pre-built structure, nothing to allocate).

Refused (``EPERM`` unless said otherwise), whatever the guard thought of the command:

- ``open_by_handle_at``/``name_to_handle_at`` (reaching files by handle, past every mount);
- the mount family (``mount``, ``umount2``, ``pivot_root``, ``move_mount``, ``open_tree``, ``fsopen``...);
- new user namespaces (``unshare``/``clone`` with ``CLONE_NEWUSER``) and ``setns``; ``clone3`` answers
  ``ENOSYS``, so the C library falls back to ``clone``, whose flags the filter can read;
- ``keyctl``, ``add_key``, ``request_key``; ``bpf``, ``perf_event_open``, ``userfaultfd``;
- ``io_uring_setup``/``enter``/``register`` (``ENOSYS``: libraries fall back to ordinary I/O);
- ``ioctl`` ``TIOCSTI`` and ``TIOCLINUX`` (typing into a terminal), ``mknod`` of devices, and the set-user-ID
  and set-group-ID bits in ``chmod`` (a root-owned binary made set-user-ID is an escalation for others);
- sockets of any family but IPv4, IPv6 and netlink: no ``AF_UNIX`` (only ``socketpair``, which cannot reach
  anything outside the call), no ``AF_VSOCK`` (the hypervisor's host), no ``AF_PACKET``/``AF_ALG``...;
- with ``inet="none"`` also IPv4/IPv6 sockets (network off without a network namespace); with
  ``inet="stream"`` IPv4/IPv6 datagram and raw sockets (no UDP where only the proxy may be reached).

``ptrace`` stays allowed (debuggers): bwrap's PID namespace and Landlock's ptrace rule already confine it to
the call's own processes.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import platform
import threading
from pathlib import Path
from typing import Literal

__all__ = ["FilterUnavailable", "filter_program", "seccomp_status"]

Inet = Literal["all", "stream", "none"]

_AF_UNIX, _AF_INET, _AF_INET6, _AF_NETLINK = 1, 2, 10, 16
_SOCK_TYPE_MASK = 0xF
_SOCK_STREAM = 1
_CLONE_NEWUSER = 0x10000000
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
_S_IFMT, _S_IFCHR, _S_IFBLK = 0o170000, 0o020000, 0o060000
_S_ISUID, _S_ISGID = 0o4000, 0o2000

_DENIED = (
    "open_by_handle_at", "name_to_handle_at",
    "mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr",
    "setns", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "acct", "swapon",
    "swapoff", "reboot", "quotactl", "lookup_dcookie", "vhangup",
)  # fmt: skip
_UNIMPLEMENTED = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register")


class FilterUnavailable(RuntimeError):
    """libseccomp cannot be loaded here (the message says what to install)."""


_lock = threading.Lock()
_programs: dict[tuple[Inet, bool], bytes] = {}
_failure: str | None = None


def _rule(flt: object, action: int, name: str, *args: object) -> None:
    import pyseccomp

    try:
        flt.add_rule(action, name, *args)  # type: ignore[attr-defined]
    except (ValueError, OSError, RuntimeError) as exc:
        # a system call this architecture does not have (mknod on arm64, umount on x86_64...) needs no rule
        try:
            pyseccomp.resolve_syscall(pyseccomp.system_arch(), name)
        except Exception:
            return
        raise FilterUnavailable(f"libseccomp refused the rule for {name}: {exc}") from None


def _build(inet: Inet, unix_sockets: bool) -> bytes:
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as exc:  # the binding is a dependency; the C library may be missing
        raise FilterUnavailable(
            f"the system-call filter needs libseccomp (Debian/Ubuntu: apt install libseccomp2): {exc}"
        ) from None
    deny = sc.ERRNO(errno.EPERM)
    flt = sc.SyscallFilter(sc.ALLOW)
    flt.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    for name in _DENIED:
        _rule(flt, deny, name)
    for name in _UNIMPLEMENTED:
        _rule(flt, sc.ERRNO(errno.ENOSYS), name)
    _rule(flt, deny, "unshare", sc.Arg(0, sc.MASKED_EQ, _CLONE_NEWUSER, _CLONE_NEWUSER))
    _rule(flt, deny, "clone", sc.Arg(0, sc.MASKED_EQ, _CLONE_NEWUSER, _CLONE_NEWUSER))
    for request in (_TIOCSTI, _TIOCLINUX):
        _rule(flt, deny, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    for kind in (_S_IFCHR, _S_IFBLK):
        _rule(flt, deny, "mknod", sc.Arg(1, sc.MASKED_EQ, _S_IFMT, kind))
        _rule(flt, deny, "mknodat", sc.Arg(2, sc.MASKED_EQ, _S_IFMT, kind))
    for bit in (_S_ISUID, _S_ISGID):
        _rule(flt, deny, "chmod", sc.Arg(1, sc.MASKED_EQ, bit, bit))
        _rule(flt, deny, "fchmod", sc.Arg(1, sc.MASKED_EQ, bit, bit))
        _rule(flt, deny, "fchmodat", sc.Arg(2, sc.MASKED_EQ, bit, bit))
        _rule(flt, deny, "fchmodat2", sc.Arg(2, sc.MASKED_EQ, bit, bit))
    # socket families: IPv4, IPv6 and netlink only (AF_UNIX too when the configuration allows it)
    allowed = {_AF_INET, _AF_INET6, _AF_NETLINK} | ({_AF_UNIX} if unix_sockets else set())
    if inet == "none":
        allowed -= {_AF_INET, _AF_INET6}
    top = max(allowed) + 1
    refuse = sc.ERRNO(errno.EAFNOSUPPORT)
    for family in range(top):
        if family not in allowed:
            _rule(flt, refuse, "socket", sc.Arg(0, sc.EQ, family))
    _rule(flt, refuse, "socket", sc.Arg(0, sc.GE, top))
    if inet == "stream":
        for family in (_AF_INET, _AF_INET6):
            # the type word carries SOCK_NONBLOCK/SOCK_CLOEXEC above the low bits: compare the type alone
            for kind in range(2, _SOCK_TYPE_MASK + 1):
                _rule(
                    flt,
                    deny,
                    "socket",
                    sc.Arg(0, sc.EQ, family),
                    sc.Arg(1, sc.MASKED_EQ, _SOCK_TYPE_MASK, kind),
                )
    fd = os.memfd_create("hermes-seccomp", os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(fd), "wb") as out:
            flt.export_bpf(out)
        size = os.lseek(fd, 0, os.SEEK_END)
        return os.pread(fd, size, 0)
    finally:
        os.close(fd)


def _cache_file(inet: Inet, unix_sockets: bool) -> Path | None:
    """Where the program of a variant is kept between processes (hermes's cache: hidden from every sandbox).

    Loading libseccomp looks it up with ``ldconfig`` (tens of milliseconds); the program depends only on
    this module's rules, the architecture and the variant, which name the file.
    """
    try:
        from .. import paths

        digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
        folder = paths.cache_dir() / "seccomp"
    except OSError:
        return None
    return folder / f"{platform.machine()}-{inet}-{int(unix_sockets)}-{digest}.bpf"


def _cached(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if data and len(data) % 8 == 0 else None


def _keep(path: Path | None, program: bytes) -> None:
    if path is None:
        return
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(program)
        os.replace(tmp, path)


def filter_program(inet: Inet = "all", unix_sockets: bool = False) -> bytes:
    """The BPF program (``struct sock_filter`` array) of the filter variant; ``FilterUnavailable`` without
    libseccomp. Built once per machine and variant, then read from hermes's cache."""
    global _failure
    key = (inet, unix_sockets)
    with _lock:
        program = _programs.get(key)
        if program is not None:
            return program
        cache = _cache_file(inet, unix_sockets)
        program = _cached(cache)
        if program is None:
            if _failure is not None:
                raise FilterUnavailable(_failure)
            try:
                program = _build(inet, unix_sockets)
            except FilterUnavailable as exc:
                _failure = str(exc)
                raise
            _keep(cache, program)
        _programs[key] = program
        return program


def seccomp_status() -> tuple[bool, str]:
    """``(True, "")`` when the filter can be built here, else ``(False, reason)``."""
    try:
        filter_program()
    except FilterUnavailable as exc:
        return False, str(exc)
    return True, ""


def pipe_of(program: bytes) -> int:
    """A read descriptor holding ``program`` (for ``bwrap --seccomp FD``; one per call, read once)."""
    if len(program) > 60_000:  # a pipe holds 64 KiB without a reader; the filter is a few KiB
        fd = os.memfd_create("hermes-seccomp", 0)
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
        return fd
    read, write = os.pipe()
    try:
        os.write(write, program)
    finally:
        os.close(write)
    return read


class Installer:
    """Installs a program in the calling process (Landlock's child, between fork and exec): the structure is
    built here, in the parent, so the child only makes one system call."""

    def __init__(self, program: bytes) -> None:
        import ctypes

        class _Prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        self._buffer = ctypes.create_string_buffer(program, len(program))
        self._prog = _Prog(len(program) // 8, ctypes.addressof(self._buffer))
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.prctl.restype = ctypes.c_int
        self._ref = ctypes.byref(self._prog)
        self._ctypes = ctypes

    def install(self) -> None:
        # PR_SET_SECCOMP = 22, SECCOMP_MODE_FILTER = 2 (no_new_privs is set before)
        if self._libc.prctl(22, 2, self._ref, 0, 0) != 0:
            raise OSError(self._ctypes.get_errno(), "seccomp filter")
