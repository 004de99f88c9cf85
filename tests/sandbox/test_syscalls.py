"""The system-call filter, with every guard off, on both backends and through every channel that runs code:
keyrings, io_uring, bpf, perf events, userfaultfd, new user namespaces, ``setns``, mounts, terminal injection
(``TIOCSTI``), device nodes, set-user-ID bits, ``AF_UNIX``/``AF_VSOCK``/``AF_PACKET`` sockets and ``ptrace`` of a
host process all fail; ``socketpair`` and ordinary work still go."""

from __future__ import annotations

import json
import platform
import subprocess
from pathlib import Path

import pytest
from sandbox_stage import CHANNELS, Scene, run_as_plain_user

# x86_64 and aarch64 numbers of the calls made directly (the C library has no wrapper for some)
NUMBERS = {
    "x86_64": {"keyctl": 250, "add_key": 248, "io_uring_setup": 425, "bpf": 321, "perf_event_open": 298,
               "userfaultfd": 323, "setns": 308, "clone3": 435, "ptrace": 101},
    "aarch64": {"keyctl": 219, "add_key": 217, "io_uring_setup": 425, "bpf": 280, "perf_event_open": 241,
                "userfaultfd": 282, "setns": 268, "clone3": 435, "ptrace": 117},
}  # fmt: skip

ATTACK = r"""
import ctypes, json, os, pty, socket, stat, subprocess, sys, fcntl, termios
nr = json.loads(sys.argv[1])
victim = int(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}
def call(name, *args):
    res = libc.syscall(nr[name], *args)
    return "OK %d" % res if res >= 0 else "refused errno %d" % ctypes.get_errno()
out["status"] = [l.strip() for l in open("/proc/self/status") if l.startswith("Seccomp")]
out["keyctl"] = call("keyctl", 0, -3, 0, 0, 0)            # KEYCTL_GET_KEYRING_ID of the user keyring
out["add_key"] = call("add_key", b"user", b"hermes", b"x", 1, -3)
params = ctypes.create_string_buffer(120)
out["io_uring_setup"] = call("io_uring_setup", 4, params)
attr = ctypes.create_string_buffer(128)
out["bpf"] = call("bpf", 0, attr, 128)                     # BPF_MAP_CREATE
out["perf_event_open"] = call("perf_event_open", attr, 0, -1, -1, 0)
out["userfaultfd"] = call("userfaultfd", 0)
fd = os.open("/proc/1/ns/net", os.O_RDONLY) if os.path.exists("/proc/1/ns/net") else -1
out["setns"] = call("setns", fd, 0)
out["unshare_user"] = "OK" if libc.unshare(0x10000000) == 0 else "refused errno %d" % ctypes.get_errno()
def run(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except OSError as exc:
        return "refused: %s" % exc
    return ("OK " if done.returncode == 0 else "refused exit %d " % done.returncode) + (done.stdout + done.stderr)[-120:]
out["unshare_cmd"] = run(["unshare", "-U", "-r", "true"])
out["mount_tmpfs"] = run(["mount", "-t", "tmpfs", "none", os.getcwd()])
master, slave = pty.openpty()
try:
    fcntl.ioctl(slave, termios.TIOCSTI, b"x")
    out["tiocsti"] = "OK"
except OSError as exc:
    out["tiocsti"] = "refused errno %d" % exc.errno
try:
    os.mknod("chardev", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    out["mknod"] = "OK"
except OSError as exc:
    out["mknod"] = "refused errno %d" % exc.errno
os.mkfifo("fifo")  # ordinary: a named pipe
open("tool", "w").write("#!/bin/sh\n")
try:
    os.chmod("tool", 0o4755)
    out["setuid_bit"] = "OK" if os.stat("tool").st_mode & stat.S_ISUID else "dropped"
except OSError as exc:
    out["setuid_bit"] = "refused errno %d" % exc.errno
os.chmod("tool", 0o755)  # ordinary: chmod +x
for name, family in (("af_unix", socket.AF_UNIX), ("af_vsock", 40), ("af_packet", 17), ("af_alg", 38)):
    try:
        socket.socket(family, socket.SOCK_STREAM if family != 17 else socket.SOCK_RAW)
        out[name] = "OK"
    except OSError as exc:
        out[name] = "refused errno %d" % exc.errno
a, b = socket.socketpair()
a.sendall(b"pair"); out["socketpair"] = b.recv(4).decode()
out["ptrace"] = call("ptrace", 16, victim, 0, 0)            # PTRACE_ATTACH to a host process
out["thread"] = run([sys.executable, "-c", "import threading; t = threading.Thread(target=print, args=('thread ok',)); t.start(); t.join()"])
print("RESULT:" + json.dumps(out))
"""


def _result(text: str) -> dict[str, object]:
    assert "RESULT:" in text, text
    data: dict[str, object] = json.loads(text.split("RESULT:", 1)[1].splitlines()[0])
    return data


@pytest.mark.parametrize("channel", CHANNELS)
def test_the_filter_refuses_what_no_tool_needs(
    scene: Scene, channel: str, victim: tuple[subprocess.Popen[bytes], str, str]
) -> None:
    machine = platform.machine()
    if machine not in NUMBERS:
        pytest.skip(f"system-call numbers for {machine} are not listed here")
    (scene.workspace / "attack.py").write_text(ATTACK)
    numbers = json.dumps(NUMBERS[machine])
    out = scene.shell(channel, f"cd {scene.workspace} && python3 attack.py '{numbers}' {victim[0].pid}")
    result = _result(out)
    where = f"{scene.backend}/{channel}"
    assert "Seccomp:\t2" in result["status"] or "Seccomp: 2" in str(result["status"]), (where, result)
    for key in (
        "keyctl", "add_key", "io_uring_setup", "bpf", "perf_event_open", "userfaultfd", "setns", "unshare_user",
        "unshare_cmd", "mount_tmpfs", "tiocsti", "mknod", "af_unix", "af_vsock", "af_packet", "af_alg", "ptrace",
    ):  # fmt: skip
        assert str(result[key]).startswith("refused"), (where, key, result)
    assert result["setuid_bit"] != "OK", (where, result)
    assert result["socketpair"] == "pair" and "thread ok" in str(result["thread"]), (where, result)
    assert not (scene.workspace / "chardev").exists()
    assert victim[0].poll() is None


@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
def test_as_a_plain_user_the_filter_holds_too(plain_root: Path, backend_name: str) -> None:
    machine = platform.machine()
    if machine not in NUMBERS:
        pytest.skip(f"system-call numbers for {machine} are not listed here")
    victim = subprocess.Popen(["sleep", "120"])
    try:
        out = run_as_plain_user(
            plain_root,
            backend_name,
            {"attack.py": ATTACK},
            f"python3 attack.py '{json.dumps(NUMBERS[machine])}' {victim.pid}",
        )
    finally:
        victim.kill()
        victim.wait()
    result = _result(out)
    for key in (
        "keyctl",
        "io_uring_setup",
        "bpf",
        "userfaultfd",
        "unshare_user",
        "tiocsti",
        "mknod",
        "af_unix",
    ):
        assert str(result[key]).startswith("refused"), (backend_name, key, result)
    assert result["setuid_bit"] != "OK" and result["socketpair"] == "pair", result
