"""``web_extract`` of several URLs: up to five in one call, fetched in parallel from a real (threaded) local
server, each through the SSRF policy; one that fails does not cost the others."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from pytest_httpserver import HTTPServer
from web_support import ALLOW_LOOPBACK
from werkzeug import Request, Response

from hermes_core import ToolSystem

Make = Callable[..., ToolSystem]
DELAY = 0.6


@pytest.fixture
def threaded_server() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.fixture
def open_system(make_builtin_system: Make) -> ToolSystem:
    return make_builtin_system(config={"plugins": {"web": ALLOW_LOOPBACK}})


def _slow_pages(server: HTTPServer, count: int) -> tuple[list[str], dict[str, int]]:
    lock = threading.Lock()
    seen = {"now": 0, "peak": 0}

    def handler(request: Request) -> Response:
        with lock:
            seen["now"] += 1
            seen["peak"] = max(seen["peak"], seen["now"])
        time.sleep(DELAY)
        with lock:
            seen["now"] -= 1
        number = request.path.rsplit("/", 1)[1]
        html = f"<html><head><title>Page {number}</title></head><body><p>Body of page {number}.</p></body></html>"
        return Response(html, content_type="text/html")

    urls = []
    for n in range(1, count + 1):
        server.expect_request(f"/doc/{n}").respond_with_handler(handler)
        urls.append(server.url_for(f"/doc/{n}"))
    return urls, seen


def test_five_urls_arrive_in_one_call_fetched_in_parallel(
    threaded_server: HTTPServer, open_system: ToolSystem
) -> None:
    urls, seen = _slow_pages(threaded_server, 5)
    started = time.monotonic()
    outcome = open_system.call_outcome("web_extract", {"urls": urls})
    elapsed = time.monotonic() - started
    assert outcome.ok, outcome.result
    assert outcome.result.startswith("[5 URLs: 5 read]")
    for n, url in enumerate(urls, 1):
        assert f"Title: Page {n}\nURL: {url}" in outcome.result and f"Body of page {n}." in outcome.result
    assert outcome.result.index("Page 1") < outcome.result.index("Page 5")  # in the order asked
    assert seen["peak"] == 5  # all five requests were in flight at once
    assert elapsed < 5 * DELAY, elapsed


def test_a_refused_or_failing_url_costs_only_itself(
    threaded_server: HTTPServer, open_system: ToolSystem
) -> None:
    urls, _ = _slow_pages(threaded_server, 2)
    threaded_server.expect_request("/missing").respond_with_data("no", status=404)
    asked = [
        urls[0],
        "http://169.254.169.254/latest/meta-data/",
        threaded_server.url_for("/missing"),
        urls[1],
    ]
    out = open_system.call("web_extract", {"urls": asked})
    assert out.startswith("[4 URLs: 2 read, 2 failed]")
    assert "Body of page 1." in out and "Body of page 2." in out
    assert "URL: http://169.254.169.254/latest/meta-data/\nError: refused to fetch" in out
    assert "answered HTTP 404" in out


def test_every_url_is_judged_by_the_policy(make_builtin_system: Make, threaded_server: HTTPServer) -> None:
    urls, seen = _slow_pages(threaded_server, 2)
    closed = make_builtin_system()  # loopback not allowed
    outcome = closed.call_outcome("web_extract", {"urls": urls})
    assert outcome.status == "error" and "no URL could be read" in outcome.result
    assert outcome.result.count("refused to fetch") == 2 and seen["peak"] == 0


def test_limits_and_paging(threaded_server: HTTPServer, open_system: ToolSystem) -> None:
    six = [f"https://example.com/{n}" for n in range(6)]
    outcome = open_system.call_outcome("web_extract", {"urls": six})
    assert outcome.status == "error" and "5" in outcome.result  # the schema's maxItems
    long_text = "\n".join(f"line {n} " + "x" * 60 for n in range(800))
    threaded_server.expect_request("/long").respond_with_data(long_text, content_type="text/plain")
    threaded_server.expect_request("/short").respond_with_data("short", content_type="text/plain")
    long_url, short_url = threaded_server.url_for("/long"), threaded_server.url_for("/short")
    out = open_system.call("web_extract", {"urls": [long_url, short_url], "max_chars": 4000})
    assert f'call web_extract with urls=["{long_url}"] and offset=' in out  # how to page the long one alone
    paged = open_system.call_outcome("web_extract", {"urls": [long_url, short_url], "offset": 100})
    assert paged.status == "error" and "give its URL alone" in paged.result
    assert "line 0" in open_system.call("web_extract", {"url": long_url})  # one URL, the old way
    assert open_system.call_outcome("web_extract", {}).status == "error"
