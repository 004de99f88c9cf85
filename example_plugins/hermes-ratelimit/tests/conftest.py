"""A real redis-server on a free port of 127.0.0.1 for the hermes-ratelimit tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start ``redis-server`` (no persistence) and yield its URL; skip when the binary is not installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip(
            "redis-server is not installed (apt-get install redis-server); the Redis backend is untested"
        )
    import redis

    workdir: Path = tmp_path_factory.mktemp("redis")
    for _attempt in range(3):
        port = _free_port()
        proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.02)
        client.close()
        if proc.poll() is None:
            break
    else:
        pytest.fail("redis-server did not start")
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(5)


@pytest.fixture
def redis_url(redis_server: str) -> Iterator[str]:
    """The server's URL with an empty database for each test."""
    import redis

    client = redis.Redis.from_url(redis_server)
    client.flushdb()
    client.close()
    yield redis_server
