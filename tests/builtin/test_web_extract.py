"""``web_extract`` end to end: HTML to markdown, PDF and text, paging, limits, and the SSRF guard (loopback,
private and metadata addresses refused after resolution and on every redirect hop, in every spelling)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from web_support import ALLOW_LOOPBACK, ALLOW_SECOND, make_pdf, make_png, second_server
from werkzeug import Request, Response

from hermes_core import ToolSystem

__all__ = ["second_server"]  # a fixture used below

Make = Callable[..., ToolSystem]

ARTICLE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Gardening notes</title>
<style>body { color: red }</style><script>var tracking = "do not show";</script></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<header><p>Site banner</p></header>
<main>
  <h1>Growing tomatoes</h1>
  <p>Tomatoes need <strong>sun</strong> and <a href="/water">regular water</a>.</p>
  <h2>Steps</h2>
  <ol><li>Sow seeds</li><li>Transplant</li></ol>
  <div hidden>secret hidden text</div>
  <img src="img/tomato.png" alt="a tomato">
  <img src="data:image/png;base64,AAAA" alt="inline">
  <a href="javascript:alert(1)">click me</a>
</main>
<aside>Sponsored: buy shovels</aside>
<footer>Copyright 2026</footer>
</body></html>"""


def _system(make: Make, **web: Any) -> ToolSystem:
    return make(config={"plugins": {"web": web}})


@pytest.fixture
def open_system(make_builtin_system: Make) -> ToolSystem:
    """A system whose web_extract may reach the loopback test server."""
    return _system(make_builtin_system, **ALLOW_LOOPBACK)


def test_html_becomes_clean_markdown(httpserver: HTTPServer, open_system: ToolSystem) -> None:
    httpserver.expect_request("/garden/tomatoes").respond_with_data(ARTICLE, content_type="text/html")
    out = open_system.call("web_extract", {"url": httpserver.url_for("/garden/tomatoes")})
    base = httpserver.url_for("/")
    head, body = out.split("\n\n", 1)
    assert head == f"Title: Gardening notes\nURL: {httpserver.url_for('/garden/tomatoes')}\nType: text/html"
    assert body.startswith("# Growing tomatoes\n\nTomatoes need **sun** and [regular water]")
    assert f"[regular water]({base}water)" in body
    assert "## Steps\n\n1. Sow seeds\n2. Transplant" in body
    assert f"![a tomato]({base}garden/img/tomato.png)" in body
    assert "click me" in body and "javascript:" not in body
    for gone in ("tracking", "color: red", "Home", "Sponsored", "Copyright", "secret hidden", "data:image"):
        assert gone not in out


def test_charset_comes_from_the_header_or_the_meta_tag(
    httpserver: HTTPServer, open_system: ToolSystem
) -> None:
    page = '<html><head><meta charset="iso-8859-1"><title>Caf\xe9</title></head><body><p>cr\xe8me br\xfbl\xe9e</p></body></html>'
    httpserver.expect_request("/latin").respond_with_data(page.encode("latin-1"), content_type="text/html")
    out = open_system.call("web_extract", {"url": httpserver.url_for("/latin")})
    assert "Title: Café" in out and "crème brûlée" in out


def test_long_pages_are_paged_from_one_fetch(httpserver: HTTPServer, open_system: ToolSystem) -> None:
    paragraphs = "".join(f"<p>Paragraph {i:04d} " + "lorem ipsum " * 8 + "</p>" for i in range(400))
    httpserver.expect_request("/long").respond_with_data(
        f"<html><body>{paragraphs}</body></html>", content_type="text/html"
    )
    url = httpserver.url_for("/long")
    first = open_system.call("web_extract", {"url": url, "max_chars": 10_000})
    assert "Paragraph 0000" in first and "Paragraph 0399" not in first
    footer = first.rsplit("\n", 1)[-1]
    assert footer.startswith("[characters 0-") and "call web_extract with offset=" in footer
    offset = int(footer.split("offset=")[1].split(" ")[0])
    seen = [first]
    while "for more]" in seen[-1]:
        offset = int(seen[-1].rsplit("offset=", 1)[1].split(" ")[0])
        seen.append(open_system.call("web_extract", {"url": url, "offset": offset, "max_chars": 10_000}))
        assert len(seen) < 20
    assert seen[-1].endswith("end of text]")
    text = "\n".join(s.split("\n\n", 1)[1].rsplit("\n\n[", 1)[0] for s in seen)
    assert all(f"Paragraph {i:04d}" in text for i in range(400))  # nothing lost between pages
    assert len(httpserver.log) == 1  # later pages came from the cache
    past = open_system.call_outcome("web_extract", {"url": url, "offset": 10_000_000})
    assert past.status == "error" and "past the end" in past.result


def test_pdf_text_by_page(httpserver: HTTPServer, open_system: ToolSystem) -> None:
    pdf = make_pdf(["Hello from page one", "And (parenthesised) page two"], title="Quarterly Report")
    httpserver.expect_request("/report.pdf").respond_with_data(pdf, content_type="application/pdf")
    httpserver.expect_request("/download").respond_with_data(pdf, content_type="application/octet-stream")
    out = open_system.call("web_extract", {"url": httpserver.url_for("/report.pdf")})
    assert out.startswith("Title: Quarterly Report\n")
    assert "Type: application/pdf" in out
    assert "## Page 1\n\nHello from page one\n\n## Page 2\n\nAnd (parenthesised) page two" in out
    sniffed = open_system.call("web_extract", {"url": httpserver.url_for("/download")})
    assert "Hello from page one" in sniffed  # recognised by its magic bytes, not the header


def test_a_broken_pdf_is_a_clear_error(httpserver: HTTPServer, open_system: ToolSystem) -> None:
    httpserver.expect_request("/broken.pdf").respond_with_data(
        b"%PDF-1.4\n garbage", content_type="application/pdf"
    )
    outcome = open_system.call_outcome("web_extract", {"url": httpserver.url_for("/broken.pdf")})
    assert outcome.status == "error" and "is not a readable PDF" in outcome.result


def test_text_json_and_binary(httpserver: HTTPServer, open_system: ToolSystem) -> None:
    httpserver.expect_request("/notes.txt").respond_with_data(
        "plain *text*\nline 2", content_type="text/plain"
    )
    httpserver.expect_request("/data.json").respond_with_data(
        '{"a":[1,2],"b":"x"}', content_type="application/json"
    )
    httpserver.expect_request("/pic.png").respond_with_data(make_png(), content_type="image/png")
    assert open_system.call("web_extract", {"url": httpserver.url_for("/notes.txt")}).endswith(
        "Type: text/plain\n\nplain *text*\nline 2"
    )
    assert '"a": [\n  1,\n  2\n ]' in open_system.call(
        "web_extract", {"url": httpserver.url_for("/data.json")}
    )
    image = open_system.call_outcome("web_extract", {"url": httpserver.url_for("/pic.png")})
    assert image.status == "error"
    assert "is image/png" in image.result and "use vision_analyze for images" in image.result


def test_size_limit_by_header_and_while_streaming(httpserver: HTTPServer, make_builtin_system: Make) -> None:
    httpserver.expect_request("/big").respond_with_data("x" * 5000, content_type="text/plain")

    def chunked(request: Request) -> Response:  # no Content-Length: the limit must hold while reading
        return Response((b"y" * 1000 for _ in range(10)), content_type="text/plain")

    httpserver.expect_request("/stream").respond_with_handler(chunked)
    system = _system(make_builtin_system, max_bytes=3000, **ALLOW_LOOPBACK)
    big = system.call_outcome("web_extract", {"url": httpserver.url_for("/big")})
    assert big.status == "error" and "5,000 bytes, over the 3,000 byte limit" in big.result
    streamed = system.call_outcome("web_extract", {"url": httpserver.url_for("/stream")})
    assert streamed.status == "error" and "larger than the 3,000 byte limit" in streamed.result


def test_http_errors_redirect_limits_and_odd_schemes(
    httpserver: HTTPServer, make_builtin_system: Make
) -> None:
    httpserver.expect_request("/missing").respond_with_data("nope", status=404)
    for i in range(4):
        httpserver.expect_request(f"/hop{i}").respond_with_data(
            "", status=302, headers={"Location": f"/hop{i + 1}"}
        )
    httpserver.expect_request("/hop4").respond_with_data("arrived", content_type="text/plain")
    httpserver.expect_request("/to-ftp").respond_with_data(
        "", status=301, headers={"Location": "ftp://example.org/x"}
    )
    system = _system(make_builtin_system, max_redirects=3, **ALLOW_LOOPBACK)
    assert "answered HTTP 404 NOT FOUND" in system.call(
        "web_extract", {"url": httpserver.url_for("/missing")}
    )
    assert "more than 3 redirects" in system.call("web_extract", {"url": httpserver.url_for("/hop0")})
    assert "arrived" in system.call("web_extract", {"url": httpserver.url_for("/hop1")})
    assert "(redirected from" in system.call("web_extract", {"url": httpserver.url_for("/hop1")})
    assert "which is not an http(s) URL" in system.call("web_extract", {"url": httpserver.url_for("/to-ftp")})
    for bad in ("file:///etc/passwd", "not a url", "http://host:port/"):
        outcome = system.call_outcome("web_extract", {"url": bad})
        assert outcome.status == "error" and "not a usable URL" in outcome.result


def test_a_slow_server_times_out(httpserver: HTTPServer, make_builtin_system: Make) -> None:
    def slow(request: Request) -> Response:
        time.sleep(1.5)
        return Response("late")

    httpserver.expect_request("/slow").respond_with_handler(slow)
    system = _system(make_builtin_system, timeout=0.3, **ALLOW_LOOPBACK)
    assert "did not answer within 0.3 s" in system.call("web_extract", {"url": httpserver.url_for("/slow")})


# -- the SSRF guard -----------------------------------------------------------------------------------------


@pytest.fixture
def internal(httpserver: HTTPServer) -> Iterator[HTTPServer]:
    """The loopback server, playing an internal service that must never be reached."""
    httpserver.expect_request("/").respond_with_data("internal admin page", content_type="text/plain")
    httpserver.expect_request("/secret").respond_with_data("internal admin page", content_type="text/plain")
    yield httpserver
    assert not any(r.path in ("/", "/secret") for r, _ in httpserver.log), "the internal server was reached"


def test_loopback_is_refused_by_default_in_every_spelling(
    internal: HTTPServer, builtin_system: ToolSystem
) -> None:
    port = internal.port
    for host in (
        "127.0.0.1",
        "localhost",
        "2130706433",
        "0x7f000001",
        "0177.0.0.1",
        "127.1",
        "[::ffff:127.0.0.1]",
    ):
        outcome = builtin_system.call_outcome("web_extract", {"url": f"http://{host}:{port}/secret"})
        assert outcome.status == "error", host
        assert "127.0.0.1" in outcome.result and "is a loopback address" in outcome.result, host
    v6 = builtin_system.call("web_extract", {"url": f"http://[::1]:{port}/"})
    assert "::1 is a loopback address" in v6


def test_a_redirect_to_loopback_is_refused(
    internal: HTTPServer, second_server: HTTPServer, make_builtin_system: Make
) -> None:
    second_server.expect_request("/start").respond_with_data(
        "", status=302, headers={"Location": internal.url_for("/secret")}
    )
    second_server.expect_request("/page").respond_with_data("public-ish page", content_type="text/plain")
    system = _system(make_builtin_system, **ALLOW_SECOND)
    assert "public-ish page" in system.call("web_extract", {"url": second_server.url_for("/page")})
    outcome = system.call_outcome("web_extract", {"url": second_server.url_for("/start")})
    assert outcome.status == "error"
    assert outcome.result == (
        '{"error": "refused to fetch '
        + internal.url_for("/secret")
        + " (redirected from "
        + second_server.url_for("/start")
        + '): localhost: resolves to 127.0.0.1: 127.0.0.1 is a loopback address; refused by the network policy"}'
    )


def test_names_resolving_to_metadata_or_private_addresses_are_refused(
    internal: HTTPServer, make_builtin_system: Make
) -> None:
    system = _system(
        make_builtin_system,
        resolve={"metadata.test": "169.254.169.254", "intranet.test": "10.0.0.8", "sneaky.test": "127.0.0.1"},
    )
    meta = system.call("web_extract", {"url": "http://metadata.test/latest/meta-data/iam"})
    assert "metadata.test: resolves to 169.254.169.254: 169.254.169.254 is a cloud metadata address" in meta
    assert "10.0.0.8 is a private network address" in system.call(
        "web_extract", {"url": "http://intranet.test/"}
    )
    sneaky = system.call("web_extract", {"url": f"http://sneaky.test:{internal.port}/secret"})
    assert "sneaky.test: resolves to 127.0.0.1" in sneaky
    direct = system.call("web_extract", {"url": "http://169.254.169.254/latest/meta-data/"})
    assert "is a cloud metadata address" in direct
    assert "metadata host name" in system.call("web_extract", {"url": "http://metadata.google.internal/"})


def test_an_allowed_pinned_name_keeps_its_host_header(
    httpserver: HTTPServer, make_builtin_system: Make
) -> None:
    httpserver.expect_request("/", headers={"Host": f"docs.internal:{httpserver.port}"}).respond_with_data(
        "internal docs, allowed by config", content_type="text/plain"
    )
    system = _system(make_builtin_system, resolve={"docs.internal": "127.0.0.1"}, **ALLOW_LOOPBACK)
    assert "internal docs, allowed by config" in system.call(
        "web_extract", {"url": f"http://docs.internal:{httpserver.port}/"}
    )


def test_malformed_network_config_hides_the_tool(make_builtin_system: Make) -> None:
    system = _system(make_builtin_system, allow_networks=["not-a-net"])
    assert "web_extract" not in system.available()
    assert "allow_networks: 'not-a-net' is not an IP address" in system.hidden()["web_extract"]
