"""The network walls, with every guard off: network "on" is a namespace whose only exit is hermes's proxy, "off"
is nothing at all. The host's loopback services (TCP and UDP), its abstract and path-named UNIX sockets, and
names not on the allow-list stay out of reach in both modes, on both backends; a package install through the
proxy works from a local index on an allowed name and is refused on a name that is not listed (headless: no
approval), and a human's "always" is remembered like any approval."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import socket
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_stage import Scene, load_system, run_as_plain_user, token

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.environments import environment_for
from hermes_core.sandbox import sandbox_for
from hermes_core.security import CallbackApprover


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"host-service-{self.server.secret}".encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def host_service() -> Iterator[tuple[int, str]]:
    """An HTTP service on the host's 127.0.0.1 (a free port), answering with a secret: (port, secret)."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    httpd.secret = token()  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1], httpd.secret  # type: ignore[attr-defined]
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def host_sockets(tmp_path: Path, scene: Scene) -> Iterator[dict[str, Any]]:
    """The host's UNIX sockets (abstract, and path-named inside the workspace: the attacker's best case) and a
    UDP listener on 127.0.0.1, each recording whatever reaches it."""
    got: list[bytes] = []
    abstract_name = f"\0hermes-test-{token()}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(abstract_name)
    abstract.listen(4)
    path = scene.workspace / "host.sock"
    named = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    named.bind(str(path))
    named.listen(4)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    stop = threading.Event()

    def watch(sock: socket.socket, stream: bool) -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                if stream:
                    conn, _ = sock.accept()
                    got.append(b"connected:" + conn.recv(100))
                    conn.close()
                else:
                    got.append(b"udp:" + sock.recv(100))
            except (TimeoutError, OSError):
                continue

    threads = [
        threading.Thread(target=watch, args=(abstract, True), daemon=True),
        threading.Thread(target=watch, args=(named, True), daemon=True),
        threading.Thread(target=watch, args=(udp, False), daemon=True),
    ]
    for thread in threads:
        thread.start()
    yield {"abstract": abstract_name[1:], "path": str(path), "udp": udp.getsockname()[1], "got": got}
    stop.set()
    for thread in threads:
        thread.join(1)
    for sock in (abstract, named, udp):
        sock.close()


REACH = r"""
import json, os, socket, sys, urllib.request
port, abstract, path, udp = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
out = {}
def attempt(key, fn):
    try:
        out[key] = "REACHED: " + str(fn())[:200]
    except Exception as exc:
        out[key] = "refused: %s" % exc
def tcp():
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    return s.recv(200)
attempt("tcp_direct", tcp)
proxy = os.environ.get("HTTP_PROXY")
os.environ.pop("NO_PROXY", None), os.environ.pop("no_proxy", None)  # loopback through the proxy too
through = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy} if proxy else {}))
attempt("tcp_proxy", lambda: through.open("http://127.0.0.1:%d/" % port, timeout=5).read())
attempt("tcp_proxy_name", lambda: through.open("http://localhost:%d/" % port, timeout=5).read())
attempt("metadata", lambda: through.open("http://169.254.169.254/latest/meta-data/", timeout=5).read())
def unix(address):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(address)
    s.sendall(b"from-the-sandbox")
    return "connected"
attempt("unix_abstract", lambda: unix("\0" + abstract))
attempt("unix_path", lambda: unix(path))
def datagram():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"from-the-sandbox", ("127.0.0.1", udp))
    return "sent"
attempt("udp", datagram)
print("RESULT:" + json.dumps(out))
"""


def _result(text: str) -> dict[str, str]:
    import json

    assert "RESULT:" in text, text
    data: dict[str, str] = json.loads(text.split("RESULT:", 1)[1].splitlines()[0])
    return data


@pytest.mark.parametrize("mode", ["on", "off"])
def test_host_loopback_unix_sockets_and_udp_are_out_of_reach(
    scene: Scene, host_service: tuple[int, str], host_sockets: dict[str, Any], mode: str
) -> None:
    port, secret = host_service
    if mode == "off":
        scene.system.close()
        scene.system = load_system(
            scene.workspace, scene.backend, scene.config, scene.config_marker, network="off"
        )
    (scene.workspace / "reach.py").write_text(REACH)
    out = scene.shell(
        "terminal",
        f"python3 reach.py {port} {host_sockets['abstract']} {host_sockets['path']} {host_sockets['udp']}",
    )
    result = _result(out)
    assert secret not in out
    for key, outcome in result.items():
        if key != "udp":  # a datagram may leave the socket (to the call's own loopback): it must not arrive
            assert not outcome.startswith("REACHED"), (scene.backend, mode, key, result)
    if scene.backend == "landlock" and mode == "off":
        assert result["udp"].startswith("refused"), result  # no IP socket at all without a namespace
    time.sleep(0.3)
    assert host_sockets["got"] == [], host_sockets["got"]
    if mode == "on":  # the proxy said why
        assert "loopback" in result["tcp_proxy"] or "403" in result["tcp_proxy"], result


def test_the_proxy_refuses_loopback_even_when_listed_without_allow_networks(
    tmp_path: Path, backend: str, host_service: tuple[int, str]
) -> None:
    port, secret = host_service
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = {"sandbox": {"backend": backend, "network": {"allow": ["localhost", "127.0.0.1"]}}}
    with ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        workspace=workspace,
        config=config,
    ) as system:
        box = sandbox_for(system)
        fetch = f"import urllib.request; print(urllib.request.urlopen('http://localhost:{port}/', timeout=5).read())"
        result = box.run([sys.executable, "-c", fetch], timeout=60, env={"NO_PROXY": "", "no_proxy": ""})
        assert secret not in result.output and result.exit_code != 0
        refusals = box.egress()[1].refusals
        assert any("loopback" in r for r in refusals), refusals


def test_network_host_is_the_explicit_way_to_the_hosts_loopback(
    scene: Scene, host_service: tuple[int, str]
) -> None:
    port, secret = host_service
    scene.system.close()
    scene.system = load_system(
        scene.workspace, scene.backend, scene.config, scene.config_marker, network="host"
    )
    fetch = (
        f'{sys.executable} -c "import urllib.request; '
        f"print(urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=5).read().decode())\""
    )
    out = scene.system.call("terminal", {"command": fetch, "timeout": 60})
    assert secret in out, out


# -- a package index on this machine, reached through the proxy under an allowed name -------------------------


def _wheel() -> bytes:
    files = {
        "proxpkg/__init__.py": b"VALUE = 'through the proxy'\n",
        "proxpkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: proxpkg\nVersion: 1.0\n",
        "proxpkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def digest(data: bytes) -> str:
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{name},{digest(data)},{len(data)}\n" for name, data in files.items())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("proxpkg-1.0.dist-info/RECORD", record + "proxpkg-1.0.dist-info/RECORD,,\n")
    return buffer.getvalue()


class _Index(http.server.BaseHTTPRequestHandler):
    wheel = _wheel()
    name = "proxpkg-1.0-py3-none-any.whl"

    def do_GET(self) -> None:
        self.server.hits.append(self.headers.get("Host", ""))  # type: ignore[attr-defined]
        if self.path.rstrip("/") == "/simple/proxpkg":
            sha = hashlib.sha256(self.wheel).hexdigest()
            body = f'<html><body><a href="/files/{self.name}#sha256={sha}">{self.name}</a></body></html>'.encode()
            kind = "text/html"
        elif self.path == f"/files/{self.name}":
            body, kind = self.wheel, "application/octet-stream"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def index() -> Iterator[tuple[int, list[str]]]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    httpd.hits = []  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1], httpd.hits  # type: ignore[attr-defined]
    httpd.shutdown()
    httpd.server_close()


def _index_system(workspace: Path, backend: str, config_path: Path, **kwargs: Any) -> ToolSystem:
    config_path.write_text(
        f'[sandbox]\nbackend = "{backend}"\n[sandbox.network]\nallow = ["pypi.test"]\nregistries = false\n'
        'allow_networks = ["127.0.0.1/32"]\nresolve = { "pypi.test" = "127.0.0.1", "other.test" = "127.0.0.1" }\n'
    )
    return ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        workspace=workspace,
        config=config_path,
        **kwargs,
    )


def _install(port: int, name: str) -> str:
    return (
        f"{sys.executable} -m venv --without-pip venv && PIP_CONFIG_FILE=/dev/null {sys.executable} -m pip --isolated "
        f"--python venv/bin/python install -q --no-cache-dir --index-url http://{name}:{port}/simple/ "
        f"--trusted-host {name} proxpkg && venv/bin/python -c 'import proxpkg; print(proxpkg.VALUE)'"
    )


@pytest.mark.slow
def test_pip_installs_through_the_proxy_from_an_allowed_index_and_not_from_another(
    tmp_path: Path, backend: str, index: tuple[int, list[str]]
) -> None:
    port, hits = index
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with _index_system(workspace, backend, tmp_path / "config.toml") as system:  # guarded, headless
        out = system.call("terminal", {"command": _install(port, "pypi.test"), "timeout": 180})
        assert "through the proxy" in out, out
        assert hits and all(h.startswith("pypi.test") for h in hits)
        hits.clear()
        out = system.call(
            "terminal", {"command": "rm -rf venv && " + _install(port, "other.test"), "timeout": 180}
        )
        assert "through the proxy" not in out and hits == [], out
        # the terminal ran in the session's environment: its sandbox's proxy refused (the system's own is another)
        refusals = environment_for(system).sandbox.egress()[1].refusals
        assert any("other.test is not on the sandbox's network allow-list" in r for r in refusals), refusals


@pytest.mark.slow
def test_an_unlisted_name_asks_and_always_is_remembered(
    tmp_path: Path, backend: str, index: tuple[int, list[str]]
) -> None:
    port, _ = index
    workspace = tmp_path / "ws"
    workspace.mkdir()
    asked: list[tuple[str, str]] = []

    def answer(request: Any) -> str:
        asked.append((request.kind, request.subject))
        return "always"

    config_path = tmp_path / "config.toml"
    with _index_system(workspace, backend, config_path, approver=CallbackApprover(answer)) as system:
        out = system.call("terminal", {"command": _install(port, "other.test"), "timeout": 180})
        assert "through the proxy" in out, out
    assert asked == [("network", "other.test")]
    assert 'subject = "other.test"' in config_path.read_text()
    with ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        workspace=workspace,
        config=config_path,
    ) as system:  # headless now: the standing grant answers
        out = system.call(
            "terminal", {"command": "rm -rf venv && " + _install(port, "other.test"), "timeout": 180}
        )
        assert "through the proxy" in out, out
    assert asked == [("network", "other.test")]


@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
@pytest.mark.parametrize("mode", ["on", "off"])
def test_as_a_plain_user_the_hosts_loopback_stays_out_of_reach(
    plain_root: Path, backend_name: str, mode: str, host_service: tuple[int, str]
) -> None:
    port, secret = host_service
    abstract_name = f"hermes-test-{token()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + abstract_name)
    listener.listen(1)
    try:
        out = run_as_plain_user(
            plain_root,
            backend_name,
            {"reach.py": REACH},
            f"python3 reach.py {port} {abstract_name} /nonexistent.sock 9",
            network=mode,
        )
    finally:
        listener.close()
    result = _result(out)
    assert secret not in out
    for key, outcome in result.items():
        if key != "udp":
            assert not outcome.startswith("REACHED"), (backend_name, mode, key, result)


def test_landlock_without_a_namespace_allows_only_the_proxys_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host_service: tuple[int, str]
) -> None:
    from hermes_core.sandbox import (
        Sandbox,
        SandboxRefused,
        SandboxSettings,
        choose_backend,
        settings_from_config,
    )
    from hermes_core.sandbox._landlock import probe_landlock
    from hermes_core.sandbox._netns import NetNamespace

    if choose_backend("landlock").backend is None or probe_landlock()[0] < 4:
        pytest.skip("needs Landlock ABI 4 (TCP rules)")

    def unavailable(cls: object, port: int = 0) -> NetNamespace:
        raise SandboxRefused("user namespaces are disabled here (simulated)")

    monkeypatch.setattr(NetNamespace, "create", classmethod(unavailable))
    port, secret = host_service
    from hermes_core.config import Config

    settings = settings_from_config(
        Config(
            {
                "sandbox": {
                    "backend": "landlock",
                    "network": {
                        "allow": ["service.test"],
                        "allow_networks": ["127.0.0.1/32"],
                        "resolve": {"service.test": "127.0.0.1"},
                    },
                }
            }
        )
    )
    assert isinstance(settings, SandboxSettings)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    box = Sandbox(settings, workspace=workspace)
    try:
        namespace, proxy = box.egress()
        assert namespace is None and proxy.port != port
        script = (
            "import socket, urllib.request, sys\n"
            "def tcp():\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=3).close(); return 'REACHED'\n"
            "def udp():\n"
            "    socket.socket(socket.AF_INET, socket.SOCK_DGRAM); return 'REACHED'\n"
            "for fn in (tcp, udp):\n"
            "    try: print(fn.__name__, fn())\n"
            "    except OSError as exc: print(fn.__name__, 'refused', exc.errno)\n"
            f"print(urllib.request.urlopen('http://service.test:{port}/', timeout=10).read().decode())\n"
        )
        result = box.run([sys.executable, "-c", script], timeout=60)
        assert "tcp refused" in result.output and "udp refused" in result.output, result.output
        assert secret in result.output, result.output  # through the proxy, under its allowed name
    finally:
        box.close()
