"""Dialogs, JavaScript evaluation, annotated screenshots and raw DevTools commands, in a real headless Chromium
(Playwright) on local pages served from 127.0.0.2 (the one address the network policy allows)."""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.security import ApprovalRequest, CallbackApprover
from hermes_core.testing import unguarded

HAVE_BROWSER = importlib.util.find_spec("playwright") is not None and shutil.which("chromium") is not None
pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(180),
    pytest.mark.skipif(not HAVE_BROWSER, reason="needs Playwright and chromium (.ci/run installs both)"),
]

WIDTH, HEIGHT = 800, 600
DIALOGS = """<!doctype html><html><head><title>Dialogs</title></head><body>
<button style="position:absolute;left:100px;top:100px;width:120px;height:40px"
  onclick="document.getElementById('out').textContent = confirm('Delete it?') ? 'deleted' : 'kept'">Delete</button>
<button style="position:absolute;left:300px;top:100px"
  onclick="document.getElementById('out').textContent = 'name:' + prompt('Your name?', 'anon')">Name</button>
<button style="position:absolute;left:400px;top:100px"
  onclick="alert('one'); alert('two'); document.getElementById('out').textContent = 'alerted'">Alerts</button>
<p id="out" style="position:absolute;left:100px;top:300px">none</p>
</body></html>"""


class VisionStub:
    """An OpenAI-compatible chat-completions server that keeps each request's question and images."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: Request) -> Response:
        parts = request.get_json()["messages"][0]["content"]
        images = [base64.b64decode(p["image_url"]["url"].split(",", 1)[1]) for p in parts if "image_url" in p]
        text = "\n".join(p["text"] for p in parts if p["type"] == "text")
        self.requests.append({"text": text, "images": images})
        answer = f"saw {len(images)} image(s)"
        return Response(
            json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]}),
            content_type="application/json",
        )


@pytest.fixture(scope="module")
def vision() -> VisionStub:
    return VisionStub()


@pytest.fixture(scope="module")
def site(vision: VisionStub) -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.2", port=0, threaded=True)
    server.expect_request("/dialogs").respond_with_data(DIALOGS, content_type="text/html")
    server.expect_request("/v1/chat/completions").respond_with_handler(vision)
    server.start()
    yield server
    server.stop()


def _load(home: Path, approvals: dict[str, Any], site: HTTPServer, **browser: Any) -> ToolSystem:
    config = {
        "plugins": {
            "browser": {"allow_networks": ["127.0.0.2/32"], "width": WIDTH, "height": HEIGHT, **browser},
            "vision": {"base_url": site.url_for("/v1"), "model": "vis"},
        },
        "approvals": approvals,
    }
    return ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        config=config,
        workspace=home,
    )


@pytest.fixture(scope="module")
def browser(site: HTTPServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolSystem]:
    home = tmp_path_factory.mktemp("devtools-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HERMES_HOME", str(home))
        system = _load(home, {"browser_js": "ask"}, site, eval_chars=500, eval_timeout=2)
        yield system
        system.close()


def _ref(snapshot: str, pattern: str) -> str:
    found = re.search(pattern + r"[^\n]*?\[ref=([a-z0-9]+)\]", snapshot)
    assert found, f"{pattern!r} not in snapshot:\n{snapshot}"
    return found.group(1)


def _error(outcome: Any) -> str:
    """The message of a failed call (results of errors are JSON: {"error": ...})."""
    assert outcome.status in ("error", "denied"), outcome.result
    return str(json.loads(outcome.result)["error"])


def _approving(seen: list[ApprovalRequest], answer: str = "once") -> CallbackApprover:
    def decide(request: ApprovalRequest) -> str:
        seen.append(request)
        return answer

    return CallbackApprover(decide)


def _js(system: ToolSystem, expression: str, seen: list[ApprovalRequest] | None = None) -> Any:
    asked = seen if seen is not None else []
    return system.call_outcome("browser_console", {"expression": expression}, approver=_approving(asked))


def test_a_confirm_is_answered_and_the_page_goes_on(browser: ToolSystem, site: HTTPServer) -> None:
    page = browser.call("browser_navigate", {"url": site.url_for("/dialogs")})
    delete, name, alerts = (_ref(page, f'button "{label}"') for label in ("Delete", "Name", "Alerts"))

    clicked = browser.call("browser_click", {"ref": delete})  # returns although the page now waits
    assert clicked == (
        'The page opened a confirm "Delete it?" dialog: answer it with browser_dialog (accept or dismiss); '
        "the page waits until then."
    )
    blocked = browser.call_outcome("browser_snapshot", {})
    assert blocked.status == "error" and 'A confirm "Delete it?" dialog is open' in _error(blocked)
    accepted = browser.call("browser_dialog", {"action": "accept"})
    assert accepted.startswith('Accepted the confirm "Delete it?" dialog.\nClicked e')
    assert "paragraph" in accepted and ": deleted" in accepted  # the click's own snapshot, after the answer

    browser.call("browser_click", {"ref": delete})
    assert ": kept" in browser.call("browser_dialog", {"action": "dismiss"})

    assert "with text to type" in browser.call("browser_click", {"ref": name})
    wrong = browser.call_outcome("browser_dialog", {"action": "dismiss", "text": "x"})
    assert "text answers a prompt dialog when accepting it" in _error(wrong)
    typed = browser.call("browser_dialog", {"action": "accept", "text": "Ada"})
    assert typed.startswith("Accepted the prompt \"Your name?\" (default 'anon') dialog with 'Ada'.")
    assert ": name:Ada" in typed

    assert 'an alert "one" dialog' in browser.call("browser_click", {"ref": alerts})
    second = browser.call("browser_dialog", {"action": "accept"})  # the same click opens the next one
    assert second.startswith('Accepted the alert "one" dialog.\nThe page opened an alert "two" dialog')
    assert ": alerted" in browser.call("browser_dialog", {"action": "accept"})
    none = browser.call_outcome("browser_dialog", {"action": "accept"})
    assert "no dialog is open" in _error(none)
    console = browser.call("browser_console", {})
    assert '[dialog] confirm "Delete it?" accepted' in console and '[dialog] alert "two" accepted' in console


def test_dialogs_can_be_answered_by_policy(site: HTTPServer, tmp_path: Path) -> None:
    with _load(tmp_path, {}, site, dialogs="accept") as system:
        page = system.call("browser_navigate", {"url": site.url_for("/dialogs")})
        done = system.call("browser_click", {"ref": _ref(page, 'button "Delete"')})
        assert done.startswith("Clicked e") and ": deleted" in done
        assert '[dialog] confirm "Delete it?" accepted' in system.call("browser_console", {})


def test_javascript_evaluation_returns_values(browser: ToolSystem, site: HTTPServer) -> None:
    browser.call("browser_navigate", {"url": site.url_for("/dialogs")})
    seen: list[ApprovalRequest] = []
    title = _js(browser, "document.title", seen)
    assert title.status == "ok" and title.result.startswith("Result (string, 7 characters): Dialogs\n")
    assert [r.kind for r in seen] == ["browser_js"] and seen[0].subject.startswith("javascript sha256:")
    assert seen[0].subject.endswith(f"on {site.url_for('/dialogs')}") and "document.title" in seen[0].reason

    awaited = _js(browser, "const n = await Promise.resolve(41); console.log('halfway', n); n + 1").result
    assert awaited.startswith("Result (number): 42") and "[log] halfway 41" in awaited
    nodes = _js(browser, "document.querySelectorAll('p')").result
    assert nodes.startswith('Result (object (array)): ["<p id=\\"out\\" style=') and 'none</p>"]\n' in nodes
    node = _js(browser, "document.getElementById('out')").result
    assert node.startswith('Result (object (node)): <p id="out" style=')
    shaped = _js(browser, "({a: [1, 'x'], f() {}, big: 10n, me: window})").result
    assert shaped.startswith('Result (object): {"a":[1,"x"],"f":"[function f]","big":"10n","me":"[Window]"}')
    assert _js(browser, "undefined").result.startswith("Result (undefined): undefined")
    assert _js(browser, "0 / 0").result.startswith("Result (number): NaN")

    long = _js(browser, "'x'.repeat(2000)").result
    assert "x" * 500 + "\n[cut at 500 of 2,000 characters; [plugins.browser] eval_chars" in long
    thrown = _js(browser, "null.boom")
    assert "the script threw: TypeError: Cannot read properties of null" in _error(thrown)
    endless = _js(browser, "while (true) {}")
    assert "did not finish within 2 s" in _error(endless)
    assert _js(browser, "1 + 1").result.startswith("Result (number): 2")  # the page runs again

    pending = _js(browser, "confirm('Sure?')")  # a dialog opened by the script itself
    assert pending.result.startswith('The page opened a confirm "Sure?" dialog')
    assert browser.call("browser_dialog", {"action": "accept"}).endswith("Result (boolean): true")


def test_javascript_waits_for_approval_when_configured(browser: ToolSystem, site: HTTPServer) -> None:
    browser.call("browser_navigate", {"url": site.url_for("/dialogs")})
    seen: list[ApprovalRequest] = []
    denied = browser.call_outcome(
        "browser_console", {"expression": "document.title = 'pwned'"}, approver=_approving(seen, "deny")
    )
    assert denied.status == "denied" and "needs a human's approval" in _error(denied)
    assert "[approvals] browser_js" in _error(denied)
    headless = browser.call_outcome("browser_console", {"expression": "document.title = 'pwned'"})
    assert headless.status == "denied"
    assert "Page: Dialogs" in browser.call("browser_snapshot", {})  # neither script ran
    assert browser.call_outcome("browser_console", {}).status == "ok"  # reading messages asks nobody


def _pixels(png: bytes) -> bytes:
    """The RGB bytes of a PNG (decoded by ffmpeg)."""
    out = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        input=png,
        capture_output=True,
        check=True,
    )
    assert len(out.stdout) == WIDTH * HEIGHT * 3
    return out.stdout


def _magenta(rgb: bytes, x: int, y: int) -> bool:
    i = (y * WIDTH + x) * 3
    r, g, b = rgb[i : i + 3]
    return r > 230 and g < 40 and b > 230


def test_annotate_draws_the_refs(browser: ToolSystem, site: HTTPServer, vision: VisionStub) -> None:
    page = browser.call("browser_navigate", {"url": site.url_for("/dialogs")})
    delete = _ref(page, 'button "Delete"')
    vision.requests.clear()
    plain = browser.call("browser_vision", {"question": "What is here?"})
    assert plain.startswith("saw 1 image(s)\n\n(screenshot: ") and "Boxes drawn" not in plain
    annotated = browser.call("browser_vision", {"question": "Which button deletes?", "annotate": True})
    assert f'Boxes drawn: {delete} button "Delete", ' in annotated and 'button "Alerts"' in annotated
    assert "labelled with their ref" in vision.requests[1]["text"]

    before, after = (_pixels(r["images"][0]) for r in vision.requests)
    # the Delete button spans x 100-220, y 100-140: a 2 px magenta border, its ref on a label above it
    border = [(100, 120), (219, 120), (160, 100), (160, 139)]
    assert all(_magenta(after, x, y) for x, y in border)
    assert not any(_magenta(before, x, y) for x, y in border)
    label = sum(_magenta(after, x, y) for x in range(100, 125) for y in range(87, 100))
    assert label > 100  # the label's background, around the white text "e1"
    saved = Path(annotated.rsplit("(screenshot: ", 1)[1].rstrip(")"))
    assert saved.read_bytes() == vision.requests[1]["images"][0]
    left = _js(browser, "document.querySelectorAll('[data-hermes-annotation]').length").result
    assert left.startswith("Result (number): 0")  # the overlay is gone after the screenshot


def test_raw_devtools_commands_stay_on_the_page(site: HTTPServer, tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET-VALUE")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with _load(workspace, {}, site) as system:
        system.call("browser_navigate", {"url": site.url_for("/dialogs")})
        cdp = {"method": "Runtime.evaluate", "params": {"expression": "6 * 7", "returnByValue": True}}
        assert system.call_outcome("browser_cdp", cdp).status == "denied"  # asks by default: nobody to ask
        seen: list[ApprovalRequest] = []
        ok = system.call_outcome("browser_cdp", cdp, approver=_approving(seen))
        assert ok.status == "ok" and ok.result.startswith(
            'Runtime.evaluate returned: {"result": {"type": "number"'
        )
        assert '"value": 42' in ok.result and seen[0].kind == "browser_cdp"
        assert seen[0].subject.startswith('cdp Runtime.evaluate {"expression": "6 * 7"')

        unguarded(system)  # even with every approval granted, these never reach past the page
        for method, params, why in [
            ("Page.navigate", {"url": secret.as_uri()}, "scheme 'file' is not http or https"),
            ("Page.navigate", {"url": "http://127.0.0.1:9/"}, "127.0.0.1 is a loopback address"),
            ("Target.createTarget", {"url": "about:blank"}, "the Target domain acts beyond this page"),
            ("Browser.close", {}, "the Browser domain acts beyond this page"),
            ("DOM.setFileInputFiles", {"files": [str(secret)], "nodeId": 1}, "reads or writes files"),
            ("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)}, "files"),
            ("Network.getCookies", {"frameURL": "file:///etc/passwd"}, "scheme 'file'"),
            ("Page.navigate", {"url": "about:blank", "targetId": "X"}, "another target"),
        ]:
            refused = system.call_outcome("browser_cdp", {"method": method, "params": params})
            assert refused.status == "error" and f"refused to send {method}: " in _error(refused), method
            assert why in _error(refused), (method, refused.result)
        bad = system.call_outcome("browser_cdp", {"method": "rm -rf /"})
        assert "Domain.method" in _error(bad)
        unknown = system.call_outcome("browser_cdp", {"method": "Nope.nothing"})
        assert "Nope.nothing failed: " in _error(unknown)
        page = system.call("browser_snapshot", {})
        assert f"— {site.url_for('/dialogs')}" in page and "TOP-SECRET" not in page
        still = system.call("browser_console", {"expression": "location.href"})
        assert still.startswith(
            f"Result (string, {len(site.url_for('/dialogs'))} characters): http://127.0.0.2"
        )
