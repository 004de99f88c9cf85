"""The browser tools against a real headless Chromium (Playwright) on local pages: forms, links, a JavaScript
console error, images, scrolling, history, sessions, the network policy and a clean shutdown.

Chromium starts once for most tests (a module-scoped system). Pages are served from 127.0.0.2, the only
address the policy allows; 127.0.0.1 plays an internal service that must never be reached.
"""

from __future__ import annotations

import asyncio
import base64
import html
import importlib.util
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from web_support import make_png
from werkzeug import Request, Response

import hermes_builtin.plugin
from hermes_core import ToolSystem

HAVE_BROWSER = importlib.util.find_spec("playwright") is not None and shutil.which("chromium") is not None
needs_browser = pytest.mark.skipif(
    not HAVE_BROWSER, reason="needs Playwright (pip install 'hermes-tools[browser]') and chromium on the PATH"
)
pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

LOGO = make_png(4, 3)


def _page(title: str, body: str) -> Response:
    return Response(
        f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>",
        content_type="text/html",
    )


def _site(internal: HTTPServer) -> Callable[[Request], Response]:
    inside = f"http://127.0.0.1:{internal.port}"

    def serve(request: Request) -> Response:
        path = request.path
        if path == "/":
            return _page(
                "Home",
                "<h1>Welcome</h1><a href='/form'>Sign the guestbook</a><img src='/logo.png' alt='site logo'>"
                "<script>console.error('boom: widget failed');"
                "setTimeout(() => { throw new Error('uncaught kaboom'); }, 0);</script>",
            )
        if path == "/logo.png":
            return Response(LOGO, content_type="image/png")
        if path == "/form":
            return _page(
                "Guestbook",
                "<form action='/done'><label>Your name <input name='name'></label>"
                "<label><input type='checkbox' name='news'> Newsletter</label><button>Send</button></form>",
            )
        if path == "/done":
            return _page("Thanks", f"<p>Hello, {html.escape(request.args.get('name', ''))}!</p>")
        if path == "/long":
            return _page("Long", "<p>top</p><div style='height:5000px'></div><p>bottom</p>")
        if path == "/leaky":
            return _page(
                "Leaky",
                f"<p>innocent</p><img src='{inside}/tracker.png'>"
                f"<script>fetch('{inside}/api').catch(e => console.log('fetch refused'));</script>",
            )
        if path == "/jump":
            return Response("", status=302, headers={"Location": f"{inside}/secret"})
        if path == "/slow":
            time.sleep(6)
            return _page("Slow", "<p>finally</p>")
        if path == "/set-cookie":
            return _page("Cookie", "<script>document.cookie = 'flavour=oat; path=/';</script><p>set</p>")
        if path == "/show-cookie":
            return _page(
                "Jar",
                "<p id='jar'></p><script>document.getElementById('jar').textContent = 'jar:' + document.cookie;</script>",
            )
        if path == "/v1/chat/completions":
            body = request.get_json()
            url = body["messages"][0]["content"][1]["image_url"]["url"]
            png = base64.b64decode(url.split(",", 1)[1])
            kind = "PNG" if png.startswith(b"\x89PNG\r\n\x1a\n") else "?"
            answer = f"a {kind} screenshot; q={body['messages'][0]['content'][0]['text']}"
            return Response(
                json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]}),
                content_type="application/json",
            )
        return Response("not found", status=404)

    return serve


@pytest.fixture(scope="module")
def internal() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1", port=0)
    server.expect_request(re.compile(".*")).respond_with_data("internal service")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def site(internal: HTTPServer) -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.2", port=0, threaded=True)
    server.expect_request(re.compile(".*")).respond_with_handler(_site(internal))
    server.start()
    yield server
    server.stop()


def _config(site: HTTPServer) -> dict[str, Any]:
    return {
        "plugins": {
            "browser": {
                "allow_networks": ["127.0.0.2/32"],
                "resolve": {"shop.test": "127.0.0.2", "meta.test": "169.254.169.254"},
            },
            "vision": {"base_url": site.url_for("/v1"), "model": "vis"},
        }
    }


def _load(config: dict[str, Any], home: Path) -> ToolSystem:
    return ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        config=config,
        workspace=home,
    )


@pytest.fixture(scope="module")
def browser(site: HTTPServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolSystem]:
    if not HAVE_BROWSER:
        pytest.skip("needs Playwright and chromium")
    home = tmp_path_factory.mktemp("browser-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HERMES_HOME", str(home))
        system = _load(_config(site), home)
        yield system
        system.close()


def _ref(snapshot: str, pattern: str) -> str:
    found = re.search(pattern + r"[^\n]*?\[ref=([a-z0-9]+)\]", snapshot)
    assert found, f"{pattern!r} not in snapshot:\n{snapshot}"
    return found.group(1)


@needs_browser
def test_links_forms_history_images_console_and_scrolling(browser: ToolSystem, site: HTTPServer) -> None:
    home = browser.call("browser_navigate", {"url": site.url_for("/")})
    assert home.startswith(f"Opened {site.url_for('/')} (HTTP 200).\nPage: Home — {site.url_for('/')}")
    assert '- heading "Welcome" [level=1]' in home
    assert '- link "Sign the guestbook" [ref=' in home and "-> /form" in home
    assert "[cursor=pointer]" not in home  # compact form
    full = browser.call("browser_snapshot", {"full": True})
    assert "/url: /form" in full

    loaded = f'1. {site.url_for("/logo.png")} alt="site logo" 4x3'
    deadline = time.monotonic() + 15  # the page may be shown before its image is decoded (slow when loaded)
    images = browser.call("browser_get_images", {})
    while loaded not in images and "not loaded" in images and time.monotonic() < deadline:
        time.sleep(0.1)
        images = browser.call("browser_get_images", {})
    assert loaded in images

    console = ""  # the uncaught error is thrown from a timer: collect until it arrives (slow when loaded)
    deadline = time.monotonic() + 15
    while "kaboom" not in console and time.monotonic() < deadline:
        time.sleep(0.1)
        console += browser.call("browser_console", {})
    assert "[error] boom: widget failed" in console
    assert "[pageerror] uncaught kaboom" in console or "[pageerror] Error: uncaught kaboom" in console
    assert browser.call("browser_console", {}) == "No console messages since the last check."

    form = browser.call("browser_click", {"ref": _ref(home, 'link "Sign the guestbook"')})
    assert form.startswith("Clicked e") and "Page: Guestbook" in form
    box = _ref(form, 'textbox "Your name"')
    done = browser.call("browser_type", {"ref": box, "text": "Ada Lovelace", "submit": True})
    assert "and pressed Enter." in done and "Page: Thanks" in done
    assert "Hello, Ada Lovelace!" in done

    back = browser.call("browser_back", {})
    assert back.startswith(f"Went back to {site.url_for('/form')}")

    stale = browser.call_outcome("browser_click", {"ref": "e9999"})
    assert stale.status == "error" and "unknown ref 'e9999'" in stale.result
    old_ref = box  # refs from the page before the navigation
    browser.call("browser_navigate", {"url": site.url_for("/long")})
    gone = browser.call_outcome("browser_type", {"ref": old_ref, "text": "x"})
    assert gone.status == "error"
    assert "unknown ref" in gone.result or "no longer on the page" in gone.result

    down = browser.call("browser_scroll", {"direction": "down", "pages": 2})
    assert down.startswith("Scrolled down: showing ") and "of 5" in down
    assert browser.call("browser_scroll", {"direction": "up", "pages": 5}).endswith("(top of the page).")
    bad_key = browser.call_outcome("browser_press", {"key": "rm -rf"})
    assert bad_key.status == "error" and "unknown key" in bad_key.result
    assert browser.call("browser_press", {"key": "End"}).startswith("Pressed End.")


@needs_browser
def test_every_request_obeys_the_network_policy(
    browser: ToolSystem, site: HTTPServer, internal: HTTPServer
) -> None:
    internal.clear_log()
    jump = browser.call_outcome("browser_navigate", {"url": site.url_for("/jump")})
    assert jump.status == "error"
    assert (
        f"refused to open http://127.0.0.1:{internal.port}/secret (reached from {site.url_for('/jump')})"
        in jump.result
    )
    assert "127.0.0.1 is a loopback address" in jump.result

    leaky = browser.call("browser_navigate", {"url": f"http://shop.test:{site.port}/leaky"})
    assert f"Opened http://shop.test:{site.port}/leaky (HTTP 200)." in leaky
    assert "Blocked requests:" in leaky and f"127.0.0.1:{internal.port}/tracker.png" in leaky
    deadline = time.monotonic() + 15  # the page's fetch fails asynchronously; a loaded machine is slow
    console = browser.call("browser_console", {})
    while "fetch refused" not in console and time.monotonic() < deadline:
        time.sleep(0.1)
        console = browser.call("browser_console", {})
    assert "fetch refused" in console

    for url, needle in [
        (f"http://127.0.0.1:{internal.port}/", "127.0.0.1 is a loopback address"),
        (f"http://2130706433:{internal.port}/", "127.0.0.1 is a loopback address"),
        (f"http://[::1]:{internal.port}/", "::1 is a loopback address"),
        (f"http://[::ffff:127.0.0.1]:{internal.port}/", "is a loopback address"),
        ("http://meta.test/latest/meta-data/", "resolves to 169.254.169.254"),
        ("file:///etc/passwd", "scheme 'file' is not http or https"),
    ]:
        outcome = browser.call_outcome("browser_navigate", {"url": url})
        assert outcome.status == "error" and needle in outcome.result, url
    assert not internal.log, "the internal server was reached"


@needs_browser
def test_async_callers_and_separate_sessions(browser: ToolSystem, site: HTTPServer) -> None:
    async def drive() -> tuple[str, str, str]:
        await browser.acall("browser_navigate", {"url": site.url_for("/set-cookie")}, session_id="alice")
        mine = await browser.acall(
            "browser_navigate", {"url": site.url_for("/show-cookie")}, session_id="alice"
        )
        theirs = await browser.acall(
            "browser_navigate", {"url": site.url_for("/show-cookie")}, session_id="bob"
        )
        snap = await browser.acall("browser_snapshot", {}, session_id="alice")
        return mine, theirs, snap

    mine, theirs, snap = asyncio.run(drive())
    assert "jar:flavour=oat" in mine
    assert "jar:flavour" not in theirs and "jar:" in theirs  # bob has his own cookie jar
    assert "Page: Jar" in snap

    # a sync call made from inside a running event loop works too
    async def nested() -> str:
        return browser.call("browser_snapshot", {}, session_id="bob")

    assert "Page: Jar" in asyncio.run(nested())


@needs_browser
def test_browser_vision_sends_a_screenshot(browser: ToolSystem, site: HTTPServer) -> None:
    browser.call("browser_navigate", {"url": site.url_for("/")})
    out = browser.call("browser_vision", {"question": "What is the heading?"})
    assert out.startswith("a PNG screenshot; q=What is the heading?")
    saved = Path(out.rsplit("(screenshot: ", 1)[1].rstrip(")"))
    assert saved.read_bytes().startswith(b"\x89PNG")


@needs_browser
def test_navigate_description_depends_on_web_search(browser: ToolSystem) -> None:
    def description(system: ToolSystem, enabled: list[str]) -> str:
        (nav,) = [
            d for d in system.definitions(enabled=enabled) if d["function"]["name"] == "browser_navigate"
        ]
        return str(nav["function"]["description"])

    assert not description(browser, ["browser"]).endswith("prefer web_search for simple lookups.")
    with_search = _load({**_config_with_search()}, Path(os.environ["HERMES_HOME"]))
    try:
        assert description(with_search, ["browser"]).endswith("prefer web_search for simple lookups.")
        assert "web_search" in with_search.available(enabled=["browser"])
    finally:
        with_search.close()


def _config_with_search() -> dict[str, Any]:
    return {"plugins": {"web": {"searxng_url": "http://127.0.0.1:9"}}}


def _processes_mentioning(needle: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if needle.encode() in fh.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


@needs_browser
def test_a_timeout_stops_the_call_and_close_ends_chromium(site: HTTPServer, tmp_path: Path) -> None:
    config = {**_config(site), "limits": {"tools": {"browser_navigate": {"timeout": 2}}}}
    system = _load(config, tmp_path)
    assert "Page:" in system.call("browser_snapshot", {})  # starts Chromium outside the 2 s budget
    slow = system.call_outcome("browser_navigate", {"url": site.url_for("/slow")})
    assert slow.status == "error" and "timed out after 2 s" in slow.result
    assert "Welcome" in system.call("browser_navigate", {"url": site.url_for("/")})  # still usable
    engine = system.stash("browser.engine", lambda: None)
    marker = f"--proxy-server=http://127.0.0.1:{engine.proxy.port}"
    assert _processes_mentioning(marker), "chromium should be running"
    system.close()
    deadline = time.monotonic() + 10
    while _processes_mentioning(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _processes_mentioning(marker), "a chromium process survived system.close()"
    assert not engine._thread.is_alive()


def test_hidden_with_the_reason_when_no_browser_can_run(
    make_builtin_system: Callable[..., ToolSystem],
) -> None:
    missing = make_builtin_system(config={"plugins": {"browser": {"executable": "/nonexistent/chromium"}}})
    assert "browser_navigate" not in missing.available()
    assert (
        "executable '/nonexistent/chromium' is not an executable file" in missing.hidden()["browser_navigate"]
    )
    off = make_builtin_system(config={"plugins": {"browser": {"enabled": False}}})
    assert off.hidden()["browser_click"] == "disabled by [plugins.browser] enabled = false"
    refused = off.call_outcome("browser_navigate", {"url": "http://example.org/"})
    assert refused.status == "error" and "is not available right now" in refused.result


def test_hidden_when_playwright_is_missing(
    make_builtin_system: Callable[..., ToolSystem], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *args: None if name == "playwright" else real(name, *args)
    )
    system = make_builtin_system()
    assert (
        system.hidden()["browser_snapshot"]
        == "Playwright is not installed (pip install 'hermes-tools[browser]')"
    )


def test_compact_snapshots_drop_noise_but_keep_refs() -> None:
    from hermes_builtin.tools.web._snapshot import compact, cut

    raw = "\n".join(
        [
            "- generic [active] [ref=e1]:",
            "  - navigation [ref=e2]:",
            '    - link "Docs" [ref=e3] [cursor=pointer]:',
            "      - /url: /docs",
            "  - generic [ref=f1e4]:",
            '    - textbox "Search" [ref=f1e5]',
            '    - button "Go" [ref=f1e6] [cursor=pointer]',
            '  - generic "labelled group" [ref=e7]:',
            "    - text: kept",
        ]
    )
    assert compact(raw).splitlines() == [
        "- navigation [ref=e2]:",
        '  - link "Docs" [ref=e3] -> /docs',
        '- textbox "Search" [ref=f1e5]',
        '- button "Go" [ref=f1e6]',
        '- generic "labelled group" [ref=e7]:',
        "  - text: kept",
    ]
    long = "\n".join(f"- listitem [ref=e{i}]: item {i}" for i in range(1000))
    shown = cut(long, 1000, "ask for more")
    assert len(shown) < 1100 and shown.endswith("characters; ask for more]")
    assert shown.splitlines()[-2].startswith("- listitem")  # cut on a line boundary
