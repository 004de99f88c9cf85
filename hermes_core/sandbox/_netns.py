"""A network namespace per sandbox whose only way out is hermes's proxy.

``NetNamespace.create()`` starts a short-lived helper (this Python, isolated) that makes a network namespace
(inside a user namespace of its own when hermes is not root), brings its loopback up, binds the proxy's
listening sockets on ``127.0.0.1`` and ``[::1]`` there, and hands the namespace and the sockets back over a
UNIX socket pair (``SCM_RIGHTS``) before it exits. The namespace lives as long as hermes holds them: it has
no interface but loopback and no route anywhere, so a command inside reaches nothing of the host (its
loopback services, its abstract UNIX sockets: those belong to the host's namespace) and nothing outside,
except the proxy, whose sockets are in the namespace while the proxy itself runs in hermes, outside it.

Commands join it: bwrap's launcher goes through ``nsenter`` (``--net`` on
``/proc/<hermes pid>/fd/<namespace>``, plus ``--user`` when unprivileged), the Landlock backend calls
``setns`` between fork and exec.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable

from ._layout import SandboxRefused

__all__ = ["PROXY_PORT", "NetNamespace", "netns_support"]

PROXY_PORT = 3128  # inside the sandbox's own namespace: no other program of the host can hold it

_HELPER = r"""
import ctypes, fcntl, os, socket, struct, sys
chan = socket.socket(fileno=int(sys.argv[1]))
port = int(sys.argv[2])
try:
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    flags = 0x40000000 | (0x10000000 if uid != 0 else 0)   # CLONE_NEWNET (| CLONE_NEWUSER)
    if libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), "unshare: " + os.strerror(ctypes.get_errno()))
    if uid != 0:
        with open("/proc/self/setgroups", "w") as fh: fh.write("deny")
        with open("/proc/self/uid_map", "w") as fh: fh.write("%d %d 1" % (uid, uid))
        with open("/proc/self/gid_map", "w") as fh: fh.write("%d %d 1" % (gid, gid))
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    req = struct.pack("16sH14x", b"lo", 0)
    current = struct.unpack("16sH14x", fcntl.ioctl(probe, 0x8913, req))[1]       # SIOCGIFFLAGS
    fcntl.ioctl(probe, 0x8914, struct.pack("16sH14x", b"lo", current | 0x1))    # SIOCSIFFLAGS |= IFF_UP
    probe.close()
    fds = [os.open("/proc/self/ns/net", os.O_RDONLY)]
    fds.append(os.open("/proc/self/ns/user", os.O_RDONLY) if uid != 0 else -1)
    keep = []
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            lsock = socket.socket(family, socket.SOCK_STREAM)
            lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            lsock.bind((host, port))
            lsock.listen(128)
            keep.append(lsock)
            fds.append(lsock.fileno())
        except OSError:
            if family == socket.AF_INET:
                raise
    socket.send_fds(chan, [b"ok"], [fd for fd in fds if fd >= 0])
    chan.send(b"user" if uid != 0 else b"root")
except Exception as exc:
    chan.send(("error " + str(exc)).encode())
"""


def _python() -> str:
    """An interpreter this user may run for the helper (it needs the standard library only)."""
    candidates = [sys.executable, getattr(sys, "_base_executable", ""), os.path.realpath(sys.executable)]
    candidates += [shutil.which("python3") or "", "/usr/bin/python3"]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    return sys.executable


_support_lock = threading.Lock()
_support: tuple[bool, str] | None = None


class NetNamespace:
    """A network namespace with the proxy's listeners in it (see the module docstring); ``close()`` frees it."""

    def __init__(self, netns_fd: int, userns_fd: int | None, listeners: list[socket.socket]) -> None:
        self.netns_fd = netns_fd
        self.userns_fd = userns_fd
        self.listeners = listeners
        self.port = listeners[0].getsockname()[1]
        self._closed = False
        self._enter: Callable[[], None] | None = None

    @classmethod
    def create(cls, port: int = PROXY_PORT) -> NetNamespace:
        """Make one; ``SandboxRefused`` says why when this machine cannot."""
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                done = subprocess.run(
                    [_python(), "-I", "-S", "-c", _HELPER, str(child.fileno()), str(port)],
                    pass_fds=[child.fileno()],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=30,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise SandboxRefused(f"cannot make a network namespace: {exc}") from None
            child.close()
            parent.settimeout(5)
            try:
                msg, fds, _, _ = socket.recv_fds(parent, 64, 8)
            except OSError as exc:
                raise SandboxRefused(
                    f"cannot make a network namespace: {exc} {done.stderr.decode(errors='replace')[-300:]}"
                ) from None
            if msg != b"ok" or not fds:
                for fd in fds:
                    os.close(fd)
                text = msg.decode(errors="replace").removeprefix("error ")
                raise SandboxRefused(f"cannot make a network namespace here ({text})")
            kind = parent.recv(16)
        finally:
            parent.close()
            with contextlib.suppress(OSError):
                child.close()
        netns = fds[0]
        userns = fds[1] if kind == b"user" else None
        first = 2 if userns is not None else 1
        listeners = [socket.socket(fileno=fd) for fd in fds[first:]]
        for held in (netns, userns):
            if held is not None:
                os.set_inheritable(held, False)
        return cls(netns, userns, listeners)

    def enter_argv(self) -> list[str]:
        """A launcher prefix that runs the rest of the command line inside the namespace (``nsenter``)."""
        exe = shutil.which("nsenter", path="/usr/bin:/bin:/usr/sbin:/sbin")
        if exe is None:
            raise SandboxRefused("nsenter (util-linux) is needed to join the sandbox's network namespace")
        own = f"/proc/{os.getpid()}/fd"
        args = [exe]
        if self.userns_fd is not None:
            args += ["--preserve-credentials", f"--user={own}/{self.userns_fd}"]
        return [*args, f"--net={own}/{self.netns_fd}", "--"]

    def enterer(self) -> Callable[[], None]:
        """A function for the child between fork and exec that joins the namespace (``setns``)."""
        if self._enter is not None:
            return self._enter
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        steps = []
        if self.userns_fd is not None:
            steps.append((self.userns_fd, 0x10000000))
        steps.append((self.netns_fd, 0x40000000))

        def enter() -> None:
            for fd, kind in steps:
                if libc.setns(fd, kind) != 0:
                    raise OSError(ctypes.get_errno(), "setns")

        self._enter = enter
        return enter

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for sock in self.listeners:
            with contextlib.suppress(OSError):
                sock.close()
        for fd in (self.netns_fd, self.userns_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


def netns_support(refresh: bool = False) -> tuple[bool, str]:
    """``(True, "")`` when a sandbox network namespace can be made here, else ``(False, reason)`` (cached)."""
    global _support
    with _support_lock:
        if _support is None or refresh:
            try:
                NetNamespace.create(port=0).close()
            except SandboxRefused as exc:
                _support = (False, exc.message)
            else:
                _support = (True, "")
        return _support
