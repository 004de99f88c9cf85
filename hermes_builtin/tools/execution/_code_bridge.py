"""The tool bridge of ``execute_code``: the channel the script's ``hermes_tools`` module calls tools through.

One bridge serves one script run. The script inherits one end of a datagram socket pair (``child_fd``, no
name anywhere: nothing else can reach it, and the sandbox's filter, which refuses new ``AF_UNIX`` sockets,
never has to make an exception); for each call it makes a ``socketpair`` and sends one end over that channel
(``SCM_RIGHTS``), then talks over the other. Every request must carry the run's random token. A request is one
JSON line ``{"token", "tool", "arguments"}``; the reply is ``{"result": str, "status": str}`` and the
connection closes. Requests are served one at a time on a thread, each through ``runner`` (the caller's tool
pipeline), up to ``max_calls`` of them.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import keyword
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["MODULE_NAME", "ToolBridge", "function_names", "module_source"]

log = logging.getLogger("hermes.code")

MODULE_NAME = "hermes_tools"
MAX_REQUEST_BYTES = 16 * 1024 * 1024
_READ_TIMEOUT = 10.0

# (tool, arguments, call number) -> (status, result)
Runner = Callable[[str, dict[str, Any], int], tuple[str, str]]


def function_names(tools: frozenset[str] | set[str]) -> list[str]:
    """The tools that get a function of their own in the generated module (valid, free identifiers)."""
    return sorted(
        t
        for t in tools
        if t.isidentifier() and not keyword.iskeyword(t) and not t.startswith("_") and t != "call"
    )


_MODULE_HEAD = '''"""Call the tools of this conversation from an execute_code script (generated; stdlib only).

Each function takes keyword arguments (or one dict) and returns the tool's result string; a refused or
failed call returns its error text too. ``call(name, **kwargs)`` reaches any tool listed in TOOLS.
"""

import json as _json
import socket as _socket

_FD = {fd!r}
_TOKEN = {token!r}
TOOLS = {tools!r}
_CHANNEL = []


def call(name, arguments=None, /, **kwargs):
    """Run the tool ``name`` with ``arguments`` (a dict) and/or keyword arguments; returns its result."""
    args = dict(arguments or {{}})
    args.update(kwargs)
    line = _json.dumps({{"token": _TOKEN, "tool": name, "arguments": args}}, ensure_ascii=False, default=str)
    if not _CHANNEL:
        _CHANNEL.append(_socket.socket(fileno=_FD))
    sock, theirs = _socket.socketpair()
    with sock:
        with theirs:
            _socket.send_fds(_CHANNEL[0], [b"call"], [theirs.fileno()])
        sock.sendall(line.encode("utf-8") + b"\\n")
        sock.shutdown(_socket.SHUT_WR)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    try:
        reply = _json.loads(b"".join(chunks))
        return reply["result"]
    except (ValueError, KeyError, TypeError):
        raise RuntimeError("the tool bridge closed without an answer") from None
'''

_FUNCTION = """

def {name}(arguments=None, /, **kwargs):
    {doc!r}
    return call({name!r}, arguments, **kwargs)
"""


def _summary(description: str) -> str:
    text = " ".join(description.split())
    return text if len(text) <= 200 else text[:197] + "..."


def module_source(fd: int, token: str, tools: Mapping[str, str]) -> str:
    """The text of ``hermes_tools.py`` for tools ``{name: description}`` reached over inherited descriptor ``fd``."""
    parts = [_MODULE_HEAD.format(fd=fd, token=token, tools=sorted(tools))]
    for name in function_names(set(tools)):
        parts.append(_FUNCTION.format(name=name, doc=_summary(tools[name]) or f"The {name} tool."))
    return "".join(parts)


class ToolBridge:
    """Serves one script's tool calls while the script runs; pass ``child_fd`` to the script (``pass_fds``)."""

    def __init__(self, directory: Path, runner: Runner, allowed: frozenset[str], max_calls: int) -> None:
        self._channel, self._child = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.child_fd = self._child.fileno()
        self.token = secrets.token_hex(16)
        self.allowed = allowed
        self.max_calls = max_calls
        self.log: list[dict[str, Any]] = []
        self.over_limit = 0
        self.bad_requests = 0
        self._runner = runner
        self._calls = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._channel.settimeout(0.1)
        self._sock = self._channel
        self._thread = threading.Thread(target=self._serve, daemon=True, name="hermes-code-bridge")
        self._thread.start()

    def stop(self, wait: float = 5.0) -> bool:
        """Stop serving; True when a tool call was still running after ``wait`` seconds (it finishes alone)."""
        self._stop.set()
        if self._thread is not None:
            with contextlib.suppress(OSError):
                self._child.send(b"stop")  # wakes the receiving thread at once
            self._thread.join(wait)
        self._child.close()
        self._channel.close()
        return self._thread is not None and self._thread.is_alive()

    def calls(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(entry) for entry in self.log]

    def _serve(self) -> None:
        sock = self._sock
        assert sock is not None
        while not self._stop.is_set():
            try:
                _, fds, _, _ = socket.recv_fds(sock, 16, 4)
            except TimeoutError:
                continue
            except OSError:
                return
            conns = []
            for fd in fds:
                try:
                    conns.append(socket.socket(fileno=fd))
                except OSError:
                    os.close(fd)  # not a socket: nothing to serve
                    self.bad_requests += 1
            if self._stop.is_set() or not conns:
                for conn in conns:
                    conn.close()
                continue
            for conn in conns[1:]:
                conn.close()
            with conns[0] as conn:
                try:
                    self._handle(conn)
                except OSError:
                    continue  # the script went away mid-request

    def _read(self, conn: socket.socket) -> bytes | None:
        conn.settimeout(_READ_TIMEOUT)
        data = bytearray()
        while b"\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_REQUEST_BYTES:
                return None
        return bytes(data.split(b"\n", 1)[0])

    def _reply(self, conn: socket.socket, status: str, result: str) -> None:
        conn.sendall(json.dumps({"result": result, "status": status}, ensure_ascii=False).encode("utf-8"))

    def _handle(self, conn: socket.socket) -> None:
        raw = self._read(conn)
        if raw is None:
            self.bad_requests += 1
            self._reply(conn, "error", _error(f"request larger than {MAX_REQUEST_BYTES} bytes"))
            return
        try:
            request = json.loads(raw)
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self.bad_requests += 1
            self._reply(conn, "error", _error("malformed request"))
            return
        token = request.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self.token.encode()):
            self.bad_requests += 1
            self._reply(conn, "denied", _error("invalid token"))
            return
        tool = request.get("tool")
        arguments = request.get("arguments")
        if not isinstance(tool, str) or not isinstance(arguments, dict | None):
            self.bad_requests += 1
            self._reply(conn, "error", _error("a request needs a tool name and a dict of arguments"))
            return
        if self._calls >= self.max_calls:
            self.over_limit += 1
            self._reply(conn, "error", _error(f"this script already made its {self.max_calls} tool calls"))
            return
        self._calls += 1
        if tool not in self.allowed:
            status, result = "refused", _error(self._not_allowed(tool))
        else:
            try:
                status, result = self._runner(tool, arguments or {}, self._calls)
            except Exception:  # the pipeline never raises; a broken runner must not kill the bridge
                log.exception("execute_code: the bridge could not run %r", tool)
                status, result = "error", _error(f"the call of {tool!r} failed inside the bridge")
        with self._lock:
            self.log.append({"tool": tool[:100], "status": status, "chars": len(result)})
        self._reply(conn, status, result)

    def _not_allowed(self, tool: str) -> str:
        names = ", ".join(sorted(self.allowed)) or "none"
        return f"tool {tool[:100]!r} is not available to scripts in this conversation (available: {names})"


def _error(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)
