"""``terminal {"command": "true"}`` in a warm ``container`` session and a warm ``ssh`` session, each against its
engine's own round trip: ``podman exec C true`` on the session's container, and ``ssh host true`` over an open
ControlMaster connection to the same sshd.

Target (issue 20): a warm container or SSH session costs at most 2x its engine's round trip. The calls alternate
round after round (interleaved), so machine noise hits every side alike; min and median are printed with the
ratios. Needs root, podman (with a containers.conf that works here: ``CONTAINERS_CONF``), an image with bash
(default: the test suite's ``localhost/hermes-test-debian:py3-2``, built by ``tests/environments/remote``) and
sshd. It starts a private sshd on a free port for the test user ``hermes-ssh`` (made by the tests) and stops it.
Run from a non-editable install: ``python benchmarks/bench_remote.py [rounds] [image]``.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.environments import environment_for

USER = "hermes-ssh"


def _system(workspace: Path, config: dict[str, Any]) -> ToolSystem:
    return ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        workspace=workspace,
        config=config,
    )


def _sshd(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    (folder / "keys").write_text((folder / "client.pub").read_text())
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    Path("/run/sshd").mkdir(exist_ok=True)
    (folder / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host'}\nPidFile none\n"
        f"AuthorizedKeysFile {folder / 'keys'}\nStrictModes no\nPasswordAuthentication no\nUsePAM no\n"
        f"AllowUsers {USER}\nMaxSessions 100\nSubsystem sftp internal-sftp\n"
    )
    daemon = subprocess.Popen(
        ["/usr/sbin/sshd", "-D", "-e", "-f", str(folder / "sshd_config")], stderr=subprocess.DEVNULL
    )
    for _ in range(200):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {(folder / 'host.pub').read_text()}")
    return daemon, port


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    image = sys.argv[2] if len(sys.argv) > 2 else "localhost/hermes-test-debian:py3-2"
    podman = shutil.which("podman")
    if os.geteuid() != 0 or podman is None or subprocess.run([podman, "image", "exists", image]).returncode:
        sys.exit(f"needs root, podman and the image {image} (run tests/environments/remote once to build it)")
    folder = Path(tempfile.mkdtemp(prefix="hermes-bench-remote-", dir="/var/tmp"))
    folder.chmod(0o755)
    workspace = folder / "ws"
    workspace.mkdir()
    remote_ws = Path(f"/home/{USER}/bench-ws")
    remote_ws.mkdir(exist_ok=True)
    shutil.chown(remote_ws, USER, USER)
    daemon, port = _sshd(folder)
    control = folder / "control"
    ssh = ["ssh", "-i", str(folder / "client"), "-o", f"UserKnownHostsFile={folder / 'known_hosts'}"]
    ssh += ["-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-S", str(control), "-p", str(port)]
    master = subprocess.Popen([*ssh, "-M", "-N", f"{USER}@127.0.0.1"])
    container = _system(workspace, {"environment": {"kind": "container", "container": {"image": image}}})
    ssh_config = {
        "host": "127.0.0.1",
        "port": port,
        "user": USER,
        "key": str(folder / "client"),
        "known_hosts": str(folder / "known_hosts"),
        "workspace": str(remote_ws),
    }
    remote = _system(workspace, {"environment": {"kind": "ssh", "ssh": ssh_config}})
    try:
        for system in (container, remote):  # warm: the container made, the connection open, the shell known
            for _ in range(2):
                assert "[exit code 0" in system.call("terminal", {"command": "true"})
        owner = SimpleNamespace(
            host=container, workspace=container.workspace, session_id=container.session_id
        )
        name = environment_for(owner).container_name  # type: ignore[attr-defined]
        for _ in range(50):
            if subprocess.run([*ssh, "-O", "check", "x"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        sides: dict[str, Callable[[], object]] = {
            "container terminal": lambda: container.call("terminal", {"command": "true"}),
            "podman exec C true": lambda: subprocess.run([podman, "exec", name, "true"], check=True),
            "ssh terminal": lambda: remote.call("terminal", {"command": "true"}),
            "ssh host true (master)": lambda: subprocess.run([*ssh, f"{USER}@127.0.0.1", "true"], check=True),
        }
        times: dict[str, list[float]] = {k: [] for k in sides}
        for _ in range(rounds):
            for label, fn in sides.items():
                times[label].append(_timed(fn))
        print(f"{rounds} rounds, interleaved (ms)")
        for label, values in times.items():
            print(f"  {label:26s} min {min(values):8.2f}  median {statistics.median(values):8.2f}")
        for ours, base in (
            ("container terminal", "podman exec C true"),
            ("ssh terminal", "ssh host true (master)"),
        ):
            lo = min(times[ours]) / min(times[base])
            mid = statistics.median(times[ours]) / statistics.median(times[base])
            print(f"  {ours} / {base}: min {lo:.2f}x, median {mid:.2f}x (target <= 2x)")
    finally:
        container.close()
        remote.close()
        subprocess.run([*ssh, "-O", "exit", "x"], capture_output=True)
        master.terminate()
        daemon.terminate()
        daemon.wait(10)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(remote_ws, ignore_errors=True)


if __name__ == "__main__":
    main()
