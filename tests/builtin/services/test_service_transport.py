"""Transport failures of the service tools: a download that drips past its deadline, a host that is down, a
server that never answers. Each ends as a clear error without the credentials that were in play."""

from __future__ import annotations

import base64
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from hermes_core import ToolSystem

Configure = Callable[..., ToolSystem]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)
TG_TOKEN = "5550001111:AAF-transport-test-token-xyz"


@pytest.fixture
def dripping_server() -> Iterator[str]:
    """A raw HTTP server on an ephemeral port that sends a PNG one byte every 0.1 s (each read is quick, the whole
    is not): only a deadline over the whole download stops it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nConnection: close\r\n\r\n")
                try:
                    for byte in PNG * 100:
                        if stop.is_set():
                            break
                        conn.sendall(bytes([byte]))
                        time.sleep(0.1)
                except OSError:
                    pass  # the client gave up, as it should

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(5)
    listener.close()


def test_download_deadline_covers_the_whole_transfer(
    configure: Configure,
    base: str,
    secret: Callable[[str], Any],
    httpserver: HTTPServer,
    dripping_server: str,
) -> None:
    httpserver.expect_request("/v1/images/generations").respond_with_json(
        {"data": [{"url": f"{dripping_server}/x.png"}]}
    )
    system = configure(
        images={"api_key": secret("k-123456789"), "base_url": f"{base}/v1", "download_timeout": 1}
    )
    started = time.monotonic()
    outcome = system.call_outcome("image_generate", {"prompt": "x"})
    assert outcome.status == "error" and "took over 1 s; stopped" in outcome.result, outcome.result
    assert time.monotonic() - started < 5


def test_unreachable_host_hides_the_token_in_the_url(
    configure: Configure, secret: Callable[[str], Any]
) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    system = configure(telegram={"bot_token": secret(TG_TOKEN), "base_url": f"http://127.0.0.1:{port}"})
    outcome = system.call_outcome("send_message", {"target": "1", "text": "hi"})
    assert outcome.status == "error" and "cannot reach Telegram while sending a message" in outcome.result
    assert TG_TOKEN not in outcome.result and "AAF-transport" not in outcome.result


def test_a_server_that_never_answers_times_out(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    def stall(_request: Request) -> Response:
        time.sleep(1.0)
        return Response("[]", content_type="application/json")

    httpserver.expect_request("/api/states").respond_with_handler(stall)
    system = configure(homeassistant={"url": base, "token": secret("hass-token-abcdef"), "timeout": 0.3})
    outcome = system.call_outcome("ha_list_entities", {})
    assert outcome.status == "error" and "Home Assistant did not answer within 0.3 s" in outcome.result
    deadline = time.monotonic() + 5
    while (
        not httpserver.log and time.monotonic() < deadline
    ):  # let the stalled reply finish before the next test
        time.sleep(0.05)


def test_inline_data_uri_images_need_no_download(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    inline = "data:image/png;base64," + base64.b64encode(PNG).decode()
    httpserver.expect_request("/fal-ai/flux/schnell").respond_with_json({"images": [{"url": inline}]})
    system = configure(images={"provider": "fal", "api_key": secret("fal-key-12345"), "base_url": base})
    outcome = system.call_outcome("image_generate", {"prompt": "x"})
    assert outcome.ok, outcome.result
    assert [r.path for r, _ in httpserver.log] == ["/fal-ai/flux/schnell"]
