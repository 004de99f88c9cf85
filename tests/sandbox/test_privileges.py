"""No capabilities inside the walls, as root (CI is root) and as a plain user: with every guard off, a command
reads its own capability sets and tries the escapes that capabilities would open (``open_by_handle_at`` on the
workspace's mount, remounting the read-only system folders writable, making a block device). None succeeds.

Run as root, bwrap without a user namespace of its own kept the full set (``CapEff 000001fffeffffff``) and each
of these escapes worked; the plain-user run proves the same walls hold when hermes itself is unprivileged.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sandbox_stage import CHANNELS, PLAIN_UID, Scene, run_as_plain_user

# Prints one JSON object: the capability lines of /proc/self/status and the outcome of each escape.
ATTACK = r"""
import ctypes, ctypes.util, json, os, subprocess, sys
out = {}
for line in open("/proc/self/status"):
    key, _, value = line.partition(":")
    if key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"):
        out[key] = value.strip()

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)

class Handle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int), ("f_handle", ctypes.c_ubyte * 128)]

def by_handle(path):
    # a legitimate handle of a path on the workspace's mount: opening it needs CAP_DAC_READ_SEARCH
    handle = Handle(handle_bytes=128)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(-100, path.encode(), ctypes.byref(handle), ctypes.byref(mount_id), 0) != 0:
        return "name_to_handle_at refused: errno %d" % ctypes.get_errno()
    mount_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = libc.open_by_handle_at(mount_fd, ctypes.byref(handle), os.O_RDONLY | os.O_DIRECTORY)
    finally:
        os.close(mount_fd)
    if fd < 0:
        return "refused: errno %d" % ctypes.get_errno()
    os.close(fd)
    return "OPENED"

out["open_by_handle_at"] = by_handle(os.getcwd())

def run(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except OSError as exc:
        return "refused: %s" % exc
    return "exit %d: %s" % (done.returncode, (done.stdout + done.stderr).strip()[-200:])

usr = os.path.realpath(sys.prefix)
out["remount"] = run(["mount", "-o", "remount,rw,bind", usr])
probe = os.path.join(usr, "hermes-remount-probe.pth")
try:
    open(probe, "w").write("import os\n")
    out["write_prefix"] = "WROTE"
    os.unlink(probe)
except OSError as exc:
    out["write_prefix"] = "refused: errno %d" % exc.errno
out["mknod"] = run(["mknod", "blockdev", "b", "8", "0"])
out["mknod_exists"] = os.path.exists("blockdev")
print("RESULT:" + json.dumps(out))
"""


def _result(text: str) -> dict[str, object]:
    assert "RESULT:" in text, text
    data: dict[str, object] = json.loads(text.split("RESULT:", 1)[1].splitlines()[0])
    return data


def _assert_no_privileges(result: dict[str, object], where: str, host_is_root: bool) -> None:
    # The bounding set matters only where exec could regain capabilities (uid 0); with no_new_privs a plain
    # user's untouched bounding set grants nothing.
    sets = ("CapInh", "CapPrm", "CapEff", "CapAmb", *(("CapBnd",) if host_is_root else ()))
    for key in sets:
        assert int(str(result[key]), 16) == 0, (where, key, result)
    assert result["NoNewPrivs"] == "1", (where, result)
    assert "refused" in str(result["open_by_handle_at"]), (where, result)
    assert not str(result["remount"]).startswith("exit 0"), (where, result)
    assert result["write_prefix"] != "WROTE", (where, result)
    assert not str(result["mknod"]).startswith("exit 0") and result["mknod_exists"] is False, (where, result)


@pytest.mark.parametrize("channel", CHANNELS)
def test_no_capabilities_inside_and_their_escapes_fail(scene: Scene, channel: str) -> None:
    (scene.workspace / "attack.py").write_text(ATTACK)
    out = scene.shell(channel, f"cd {scene.workspace} && python3 attack.py")
    _assert_no_privileges(_result(out), f"{scene.backend}/{channel} as uid {os.geteuid()}", os.geteuid() == 0)


@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
def test_as_a_plain_user_no_capabilities_either(plain_root: Path, backend_name: str) -> None:
    out = run_as_plain_user(plain_root, backend_name, {"attack.py": ATTACK}, "python3 attack.py")
    _assert_no_privileges(_result(out), f"{backend_name} as uid {PLAIN_UID}", False)
