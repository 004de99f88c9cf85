"""Real engines for the ``container`` and ``ssh`` kinds: podman with a containers.conf of the test run's own, a
Debian image with Python built locally (no registry is reachable: ``mmdebstrap`` + ``podman import``, once per
machine, behind a lock that xdist workers share), a busybox image without bash, and a private sshd on a free
port of 127.0.0.1 with a generated host key and a test user whose home is not the host's.

On CI every tool is installed by ``.ci/run``, so a missing one fails the tests; elsewhere they skip and say why.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import hermes_builtin.plugin
from hermes_core import ToolSystem

DEBIAN_IMAGE = "localhost/hermes-test-debian:py3-2"
BUSYBOX_IMAGE = "localhost/hermes-test-busybox:1"
SSH_USER = "hermes-ssh"
_LOCK = Path("/var/tmp/hermes-test-images.lock")
_CONF = """[containers]
default_ulimits = ["nofile=16384:16384", "nproc=16384:16384"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing: .ci/run installs it")
    pytest.skip(f"{what} is not installed on this machine")


def _run(argv: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def podman(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The podman CLI, configured for this machine by a containers.conf of the test run (not /etc)."""
    path = shutil.which("podman")
    if path is None or shutil.which("runc") is None:
        _missing("podman (with runc)")
    assert path is not None
    if os.geteuid() != 0:
        pytest.skip("the container tests run rootful podman (CI runs as root)")
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text(_CONF)
    os.environ["CONTAINERS_CONF"] = str(conf)  # the engine's CLI, started by hermes, reads it too
    return path


@contextlib.contextmanager
def _image_lock() -> Iterator[None]:
    with open(_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(podman: str, name: str, make: Callable[[Path], None]) -> str:
    with _image_lock():
        if _run([podman, "image", "exists", name]).returncode == 0:
            return name
        with tempfile.TemporaryDirectory(prefix="hermes-image-", dir="/var/tmp") as folder:
            make(Path(folder))
    return name


@pytest.fixture(scope="session")
def debian_image(podman: str) -> str:
    """A Debian bookworm image with bash and Python 3 and its standard library (built once per machine, then
    reused)."""

    def make(folder: Path) -> None:
        if shutil.which("mmdebstrap") is None:
            _missing("mmdebstrap")
        tar = folder / "rootfs.tar"
        done = _run(["mmdebstrap", "--quiet", "--variant=minbase", "--include=python3", "bookworm", str(tar)])
        assert done.returncode == 0, done.stderr[-2000:]
        done = _run([podman, "import", "--change", 'CMD ["/bin/bash"]', str(tar), DEBIAN_IMAGE])
        assert done.returncode == 0, done.stderr[-2000:]

    return _build(podman, DEBIAN_IMAGE, make)


@pytest.fixture(scope="session")
def busybox_image(podman: str) -> str:
    """A static busybox image: a shell, but no bash."""

    def make(folder: Path) -> None:
        busybox = shutil.which("busybox")
        if busybox is None:
            _missing("busybox-static")
        assert busybox is not None
        shutil.copy(busybox, folder / "busybox")
        (folder / "Containerfile").write_text(
            'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\n'
            'ENV PATH=/bin\nCMD ["/bin/sh"]\n'
        )
        done = _run([podman, "build", "-q", "-t", BUSYBOX_IMAGE, str(folder)])
        assert done.returncode == 0, done.stderr[-2000:]

    return _build(podman, BUSYBOX_IMAGE, make)


@pytest.fixture(scope="session")
def docker(podman: str, debian_image: str) -> Iterator[str]:
    """Debian's docker CLI against a dockerd of the test run (its own data and socket; no bridge, no iptables
    rules: containers get no network but loopback), with the Debian image loaded from podman."""
    binary, daemon_path = "/usr/bin/docker", shutil.which("dockerd") or "/usr/sbin/dockerd"
    if not (os.path.exists(binary) and os.path.exists(daemon_path)):
        _missing("docker.io (Debian's docker)")
    folder = Path(tempfile.mkdtemp(prefix="hermes-dockerd-", dir="/var/tmp"))
    socket_path = folder / "docker.sock"
    argv = [daemon_path, "--data-root", str(folder / "data"), "--exec-root", str(folder / "exec")]
    argv += ["--pidfile", str(folder / "dockerd.pid"), "-H", f"unix://{socket_path}", "--bridge=none"]
    argv += ["--iptables=false", "--ip6tables=false", "--ip-masq=false"]
    log = open(folder / "dockerd.log", "wb")  # noqa: SIM115 - closed after the daemon
    daemon = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    os.environ["DOCKER_HOST"] = f"unix://{socket_path}"  # for hermes's docker CLI too
    try:
        deadline = time.monotonic() + 60
        while _run([binary, "info"], timeout=30).returncode != 0:
            assert daemon.poll() is None, (folder / "dockerd.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "dockerd did not start"
            time.sleep(0.2)
        saved = subprocess.Popen([podman, "save", debian_image], stdout=subprocess.PIPE)
        loaded = subprocess.run([binary, "load", "-q"], stdin=saved.stdout, capture_output=True, timeout=600)
        saved.wait(60)
        assert loaded.returncode == 0, loaded.stderr[-2000:]
        yield binary
    finally:
        left = _run([binary, "ps", "-aq", "--filter", "label=hermes.environment"]).stdout.split()
        if left:
            _run([binary, "rm", "-f", *left])
        daemon.terminate()
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        os.environ.pop("DOCKER_HOST", None)
        shutil.rmtree(folder, ignore_errors=True)


# The tools' checks probe the engine or the host; on a loaded CI machine their default 2 s budget (shared with
# every other tool's check) is not enough, and a timed-out check hides the tool for its time-to-live.
CHECKS = {"check_timeout": 60}


def container_config(image: str, **settings: Any) -> dict[str, Any]:
    return {"environment": {"kind": "container", "container": {"image": image, **settings}}, "tools": CHECKS}


@dataclass(frozen=True)
class Sshd:
    """A running sshd: where it listens, the client's key, the known_hosts that names its key, the user."""

    port: int
    key: Path
    known_hosts: Path
    host_key: Path
    user: str
    home: Path

    def config(self, workspace: str, **settings: Any) -> dict[str, Any]:
        table = {
            "host": "127.0.0.1",
            "port": self.port,
            "user": self.user,
            "key": str(self.key),
            "known_hosts": str(self.known_hosts),
            "workspace": workspace,
            **settings,
        }
        return {"environment": {"kind": "ssh", "ssh": table}, "tools": CHECKS}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A non-daemon sshd of the test run on 127.0.0.1, for a test user (made when missing)."""
    binary = Path("/usr/sbin/sshd")
    if not binary.exists() or shutil.which("ssh-keygen") is None:
        _missing("openssh-server")
    if os.geteuid() != 0:
        pytest.skip("sshd for another user needs root (CI runs as root)")
    with _image_lock():  # one worker at a time makes the user
        if _run(["id", SSH_USER]).returncode != 0:
            done = _run(["useradd", "-m", "-s", "/bin/bash", SSH_USER])
            assert done.returncode == 0 or "already exists" in done.stderr, done.stderr
        _run(["usermod", "-p", "*", SSH_USER])  # unlocked, with no password: keys only
    home = Path(_run(["getent", "passwd", SSH_USER]).stdout.split(":")[5])
    # sshd reads authorized_keys as the test user: a folder it can reach (pytest's own are private to root)
    folder = Path(tempfile.mkdtemp(prefix="hermes-sshd-", dir="/var/tmp"))
    folder.chmod(0o755)
    for name in ("host", "client"):
        done = _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)])
        assert done.returncode == 0, done.stderr
    keys = folder / "authorized_keys"
    keys.write_text((folder / "client.pub").read_text())
    keys.chmod(0o644)
    Path("/run/sshd").mkdir(exist_ok=True)
    port = _free_port()
    config = folder / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host'}\nPidFile none\n"
        f"AuthorizedKeysFile {keys}\nStrictModes no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\n"
        f"AllowUsers {SSH_USER}\nMaxStartups 100:30:200\nMaxSessions 100\nSubsystem sftp internal-sftp\n"
    )
    log = open(folder / "sshd.log", "wb")  # noqa: SIM115 - closed after the daemon
    daemon = subprocess.Popen([str(binary), "-D", "-e", "-f", str(config)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 15
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert daemon.poll() is None, (folder / "sshd.log").read_text()
            assert time.monotonic() < deadline, "sshd did not listen"
            time.sleep(0.05)
        known = folder / "known_hosts"
        known.write_text(f"[127.0.0.1]:{port} {(folder / 'host.pub').read_text()}")
        yield Sshd(port, folder / "client", known, folder / "host", SSH_USER, home)
    finally:
        daemon.terminate()
        daemon.wait(10)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def remote_workspace(sshd: Sshd) -> Iterator[str]:
    """A folder of the test user's own on the "remote" host (the same machine, another user and home)."""
    path = sshd.home / f"ws-{secrets.token_hex(4)}"
    path.mkdir()
    ids = _run(["id", "-u", sshd.user]).stdout.strip(), _run(["id", "-g", sshd.user]).stdout.strip()
    os.chown(path, int(ids[0]), int(ids[1]))
    yield str(path)
    shutil.rmtree(path, ignore_errors=True)


MakeSystem = Callable[..., ToolSystem]


@pytest.fixture
def make_remote(tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], ToolSystem]]:
    """``make_remote(config)``: the built-ins in a host workspace of their own with ``config``."""
    workspace = tmp_path / "host-ws"
    workspace.mkdir()
    with ExitStack() as made:

        def make(config: dict[str, Any], **kwargs: Any) -> ToolSystem:
            system = ToolSystem.load(
                load_entry_points=False,
                plugins_dir=False,
                plugins=[hermes_builtin.plugin],
                workspace=workspace,
                config=config,
                **kwargs,
            )
            return made.enter_context(system)

        yield make
