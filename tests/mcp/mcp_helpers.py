"""Shared set-up for the MCP tests: real server processes (``echo_server.py``) over stdio and HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ToolSystem

SERVER = str(Path(__file__).with_name("echo_server.py"))
DEMO = {"command": sys.executable, "args": [SERVER]}


def load(servers: dict[str, Any], mcp: dict[str, Any] | None = None, **kwargs: Any) -> ToolSystem:
    """A system with only these MCP servers (plus any ``plugins=``), no entry points, no drop-ins."""
    return ToolSystem.load(
        config={"mcp": {**(mcp or {}), "servers": servers}},
        load_entry_points=False,
        plugins_dir=False,
        **kwargs,
    )


def eventually(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[Any], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the HTTP MCP server did not start") from None
            time.sleep(0.05)


class HttpEcho:
    """``echo_server.py --http PORT`` as a process the test starts, kills and starts again on the same port."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> HttpEcho:
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, "--http", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.proc)
        return self

    def kill(self) -> None:
        """SIGKILL: the server gets no chance to say goodbye, as when it crashes or its host goes away."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None


@pytest.fixture
def http_echo() -> Iterator[HttpEcho]:
    server = HttpEcho(free_port())
    try:
        yield server
    finally:
        server.stop()


def process_gone(pid: int) -> bool:
    """True when no process (not even a zombie waiting to be reaped) has this pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
