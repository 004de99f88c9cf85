"""The browser's only way out: a local forward proxy that applies the network policy to every connection.

Chromium is started with ``--proxy-server`` pointing here and ``--proxy-bypass-list=<-loopback>``, so every
request it makes (navigations, redirects, subresources, fetch/XHR, WebSockets, loopback included) arrives as
an absolute-form HTTP request or a ``CONNECT host:port`` tunnel. The proxy resolves the host itself, vets the
addresses with ``NetworkPolicy.vet`` and connects to a vetted address, so the browser never resolves a name and
cannot be rebound. A refused request gets ``403`` and is recorded in ``blocked`` for the tools to report.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from hermes_core.security import NetworkPolicy

log = logging.getLogger("hermes.browser")

HEAD_LIMIT = 64 * 1024
HEAD_TIMEOUT = 30.0
_HOP_HEADERS = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}


@dataclass(frozen=True, slots=True)
class Blocked:
    number: int
    target: str  # the URL (plain HTTP) or https://host:port (a tunnel)
    reason: str


class GuardedProxy:
    """An HTTP/1.1 forward proxy on ``127.0.0.1:<port>`` that only reaches what ``policy`` allows."""

    def __init__(self, policy: NetworkPolicy) -> None:
        self.policy = policy
        self.port = 0
        self.blocked: deque[Blocked] = deque(maxlen=100)
        self._numbers = itertools.count(1)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def mark(self) -> int:
        """The number of the latest refusal: pass it to ``blocked_since`` to see what came after."""
        return self.blocked[-1].number if self.blocked else 0

    def blocked_since(self, mark: int) -> list[Blocked]:
        return [b for b in self.blocked if b.number > mark]

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=HEAD_LIMIT)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        except Exception:
            log.exception("browser proxy: a connection failed")
        finally:
            self._tasks.discard(task)  # type: ignore[arg-type]
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        request_line, *header_lines = head[:-4].decode("latin-1").split("\r\n")
        parts = request_line.split(" ")
        if len(parts) != 3:
            await _answer(writer, 400, "malformed request line")
            return
        method, target, version = parts
        if method.upper() == "CONNECT":
            host, _, port_text = target.rpartition(":")
            host = host.strip("[]")
            shown = f"https://{target}"
        else:
            url = urlsplit(target)
            if url.scheme.lower() != "http" or not url.hostname:
                await _answer(writer, 400, f"not an absolute http URL: {target[:200]}")
                return
            host, port_text, shown = url.hostname, str(url.port or 80), target
        if not port_text.isdigit():
            await _answer(writer, 400, f"no port in {target[:200]}")
            return
        port = int(port_text)
        upstream = await self._connect(host, port, shown, writer)
        if upstream is None:
            return
        up_reader, up_writer = upstream
        try:
            if method.upper() == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                url = urlsplit(target)
                path = (url.path or "/") + (f"?{url.query}" if url.query else "")
                kept = [h for h in header_lines if h.split(":", 1)[0].strip().lower() not in _HOP_HEADERS]
                lines = [f"{method} {path} {version}", *kept, "Connection: close", "", ""]
                up_writer.write("\r\n".join(lines).encode("latin-1"))
            await _pipe(reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()

    async def _connect(
        self, host: str, port: int, shown: str, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        from hermes_core.security import BlockedURLError

        loop = asyncio.get_running_loop()
        try:
            addresses = await loop.run_in_executor(None, self.policy.vet, host, port)
        except BlockedURLError as err:
            self.blocked.append(Blocked(next(self._numbers), shown, str(err)))
            await _answer(writer, 403, f"Blocked by the network policy: {err}")
            return None
        except (OSError, UnicodeError) as err:
            await _answer(writer, 502, f"cannot resolve {host}: {err}")
            return None
        last: Exception | None = None
        for ip in addresses:
            try:
                return await asyncio.wait_for(asyncio.open_connection(str(ip), port), HEAD_TIMEOUT)
            except (OSError, TimeoutError) as err:
                last = err
        await _answer(writer, 502, f"cannot connect to {host}:{port}: {last}")
        return None


async def _answer(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = message.encode("utf-8", "replace")
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("latin-1")
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    while True:
        chunk = await source.read(65536)
        if not chunk:
            return
        sink.write(chunk)
        await sink.drain()


async def _pipe(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    """Copy both ways until either side is done, then stop the other direction."""
    tasks = [
        asyncio.ensure_future(_copy(client_reader, up_writer)),
        asyncio.ensure_future(_copy(up_reader, client_writer)),
    ]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
