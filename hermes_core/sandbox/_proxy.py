"""The sandbox's only way out: a small forward proxy run by hermes, outside the walls.

It speaks the three things command-line tools use: HTTP ``CONNECT host:port`` (HTTPS, and any TCP tunnel),
plain HTTP requests in absolute form (``GET http://host/path``), and SOCKS5 (``CONNECT`` with a name or an
address, no authentication). Every destination goes through ``EgressPolicy.admit`` first; a refusal is an
HTTP 403 (or a SOCKS "not allowed") whose text says why, so the command's error message tells the model.
The proxy never reads or changes what flows through a tunnel. Each connection has a thread; at most
``max_connections`` at once, idle ones end after ``idle_timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import ipaddress
import selectors
import socket
import struct
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from .._log import get_logger
from ._egress import EgressPolicy, EgressRefused

__all__ = ["EgressProxy"]

log = get_logger("hermes.sandbox.proxy")

_HEAD_LIMIT = 64 * 1024
_HOP_HEADERS = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}


class EgressProxy:
    """Serves the given listening sockets until ``close()``; ``policy`` decides every destination."""

    def __init__(
        self,
        listeners: Iterable[socket.socket],
        policy: EgressPolicy,
        *,
        max_connections: int = 128,
        idle_timeout: float = 300.0,
        connect_timeout: float = 15.0,
    ) -> None:
        self.policy = policy
        self.listeners = list(listeners)
        self.idle_timeout = idle_timeout
        self.connect_timeout = connect_timeout
        self._slots = threading.BoundedSemaphore(max_connections)
        self._closed = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.refusals: list[str] = []  # the latest refusals (at most 50), for status and tests
        for sock in self.listeners:
            sock.settimeout(0.5)
            threading.Thread(target=self._serve, args=(sock,), name="hermes-proxy", daemon=True).start()

    @property
    def port(self) -> int:
        port: int = self.listeners[0].getsockname()[1]
        return port

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            socks, self._open = list(self._open), set()
        for sock in [*self.listeners, *socks]:
            with contextlib.suppress(OSError):
                sock.close()

    # -- accepting -----------------------------------------------------------------------------------------

    def _serve(self, listener: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                with contextlib.suppress(OSError):
                    client.sendall(b"HTTP/1.1 503 Too many connections\r\nContent-Length: 0\r\n\r\n")
                    client.close()
                continue
            threading.Thread(
                target=self._handle, args=(client,), name="hermes-proxy-conn", daemon=True
            ).start()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def _handle(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        self._track(client)
        try:
            client.settimeout(30)
            first = client.recv(1, socket.MSG_PEEK)
            if not first:
                return
            upstream = self._socks(client) if first == b"\x05" else self._http(client)
            if upstream is not None:
                self._pipe(client, upstream)
        except (OSError, ValueError) as exc:
            log.debug("proxy connection ended: %s", exc)
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    with self._lock:
                        self._open.discard(sock)
                    with contextlib.suppress(OSError):
                        sock.close()
            self._slots.release()

    def _refused(self, reason: str) -> None:
        log.info("sandbox proxy refused: %s", reason)
        self.refusals = [*self.refusals[-49:], reason]

    def _connect(self, host: str, port: int) -> socket.socket:
        """A connection to ``host:port`` through the policy; ``EgressRefused`` or ``OSError``."""
        try:
            addresses = self.policy.admit(host, port)
        except EgressRefused as err:
            self._refused(str(err))
            raise
        last: OSError | None = None
        for address in addresses:
            family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(self.connect_timeout)
            try:
                sock.connect((str(address), port))
            except OSError as exc:
                sock.close()
                last = exc
                continue
            self._track(sock)
            return sock
        raise last or OSError(f"cannot connect to {host}:{port}")

    # -- HTTP ----------------------------------------------------------------------------------------------

    def _read_head(self, client: socket.socket) -> tuple[bytes, bytes]:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = client.recv(8192)
            if not chunk:
                raise ValueError("the client closed before the request head ended")
            data += chunk
            if len(data) > _HEAD_LIMIT:
                raise ValueError("request head too large")
        head, _, rest = data.partition(b"\r\n\r\n")
        return head, rest

    def _reply(self, client: socket.socket, status: str, text: str) -> None:
        body = f"hermes sandbox proxy: {text}\n".encode()
        client.sendall(
            f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )

    def _http(self, client: socket.socket) -> socket.socket | None:
        head, rest = self._read_head(client)
        lines = head.split(b"\r\n")
        try:
            method, target, version = lines[0].decode("latin-1").split(" ", 2)
        except ValueError:
            self._reply(client, "400 Bad Request", "malformed request line")
            return None
        if method.upper() == "CONNECT":
            host, port = _host_port(target, 443)
            try:
                upstream = self._connect(host, port)
            except EgressRefused as err:
                self._reply(client, "403 Forbidden", str(err))
                return None
            except OSError as exc:
                self._reply(client, "502 Bad Gateway", f"cannot connect to {host}:{port}: {exc}")
                return None
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            return upstream
        parts = urlsplit(target)
        if parts.scheme.lower() != "http" or not parts.hostname:
            self._reply(client, "400 Bad Request", "send absolute http:// URLs, or CONNECT for anything else")
            return None
        port = parts.port or 80
        try:
            upstream = self._connect(parts.hostname, port)
        except EgressRefused as err:
            self._reply(client, "403 Forbidden", str(err))
            return None
        except OSError as exc:
            self._reply(client, "502 Bad Gateway", f"cannot connect to {parts.hostname}:{port}: {exc}")
            return None
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        out = [f"{method} {path} {version}".encode("latin-1")]
        for line in lines[1:]:
            name = line.split(b":", 1)[0].strip().lower()
            if name not in _HOP_HEADERS:
                out.append(line)
        out.append(b"Connection: close")
        upstream.sendall(b"\r\n".join(out) + b"\r\n\r\n" + rest)
        return upstream

    # -- SOCKS5 --------------------------------------------------------------------------------------------

    def _recv_exact(self, sock: socket.socket, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            if not chunk:
                raise ValueError("the client closed during the SOCKS handshake")
            data += chunk
        return data

    def _socks(self, client: socket.socket) -> socket.socket | None:
        _, count = self._recv_exact(client, 2)
        methods = self._recv_exact(client, count)
        if 0 not in methods:
            client.sendall(b"\x05\xff")
            return None
        client.sendall(b"\x05\x00")
        _, command, _, kind = self._recv_exact(client, 4)
        if kind == 1:
            host = str(ipaddress.IPv4Address(self._recv_exact(client, 4)))
        elif kind == 4:
            host = str(ipaddress.IPv6Address(self._recv_exact(client, 16)))
        elif kind == 3:
            host = self._recv_exact(client, self._recv_exact(client, 1)[0]).decode("idna")
        else:
            client.sendall(b"\x05\x08\x00\x01" + bytes(6))
            return None
        (port,) = struct.unpack("!H", self._recv_exact(client, 2))
        if command != 1:  # only CONNECT: no BIND, no UDP ASSOCIATE
            client.sendall(b"\x05\x07\x00\x01" + bytes(6))
            return None
        try:
            upstream = self._connect(host, port)
        except EgressRefused:
            client.sendall(b"\x05\x02\x00\x01" + bytes(6))
            return None
        except OSError:
            client.sendall(b"\x05\x05\x00\x01" + bytes(6))
            return None
        client.sendall(b"\x05\x00\x00\x01" + bytes(6))
        return upstream

    # -- relaying ------------------------------------------------------------------------------------------

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        a.setblocking(False)
        b.setblocking(False)
        peer = {a: b, b: a}
        with selectors.DefaultSelector() as sel:
            sel.register(a, selectors.EVENT_READ)
            sel.register(b, selectors.EVENT_READ)
            open_ends = 2
            while open_ends and not self._closed.is_set():
                events = sel.select(self.idle_timeout)
                if not events:
                    return
                for key, _ in events:
                    src: Any = key.fileobj
                    try:
                        data = src.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        return
                    dst = peer[src]
                    if not data:
                        sel.unregister(src)
                        open_ends -= 1
                        with contextlib.suppress(OSError):
                            dst.shutdown(socket.SHUT_WR)
                        continue
                    dst.setblocking(True)
                    dst.settimeout(self.idle_timeout)
                    try:
                        dst.sendall(data)
                    except OSError:
                        return
                    finally:
                        dst.setblocking(False)


def _host_port(target: str, default: int) -> tuple[str, int]:
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        port = rest.lstrip(":")
    else:
        host, _, port = target.rpartition(":") if target.count(":") == 1 else (target, "", "")
    try:
        return host, int(port) if port else default
    except ValueError:
        return host, -1
