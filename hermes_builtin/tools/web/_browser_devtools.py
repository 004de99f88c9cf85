"""JavaScript evaluation (``browser_console``) and raw DevTools commands (``browser_cdp``) on the current page.

Both speak the Chrome DevTools Protocol through a session attached to the page alone (never to the browser or
another session's pages). Evaluation works like the DevTools console (``replMode``: top-level ``await``,
``let`` again), is stopped after ``eval_timeout`` seconds (an endless loop is terminated) and its value comes
back as text cut at ``eval_chars``.

Raw commands are refused when they would reach past the page: the browser as a whole and other targets
(``Browser.*``, ``Target.*``, ``Storage.*``...), files of the machine (file inputs, downloads, ``file:`` URLs) or
an address the network policy forbids (every URL in the parameters is judged like a navigation).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from hermes_core import ToolError

from ._browser_engine import BrowserSession, first_line

# Whole domains that act beyond this page: the browser, other targets and contexts, the machine.
_REFUSED_DOMAINS = frozenset(
    {"Browser", "Target", "Storage", "SystemInfo", "Tracing", "Extensions", "PWA", "Memory", "Cast"}
)
_ALLOWED = frozenset({"Browser.getVersion"})
# Methods that read or write the machine's files.
_REFUSED_METHODS = frozenset(
    {"DOM.setFileInputFiles", "DOM.getFileInfo", "Page.setDownloadBehavior", "Network.loadNetworkResource"}
)
_FOREIGN_KEYS = frozenset({"browserContextId", "targetId", "sessionId"})

# Renders the evaluated value ``this`` as text: nodes as their HTML, objects as JSON (cycles, functions,
# bigints and nodes inside spelled out), cut at ``limit`` characters in the page already.
_RENDER_JS = """function (limit) {
  const isNode = v => typeof Node !== 'undefined' && v instanceof Node;
  const html = n => n.outerHTML ?? n.textContent ?? String(n);
  const seen = new WeakSet();
  const replacer = (key, v) => {
    if (isNode(v)) { const h = html(v); return h.length > 300 ? h.slice(0, 300) + '…' : h; }
    if (typeof v === 'bigint') return v.toString() + 'n';
    if (typeof v === 'function') return '[function ' + (v.name || 'anonymous') + ']';
    if (v === window) return '[Window]';
    if (typeof v === 'object' && v !== null) {
      if (seen.has(v)) return '[seen above]';
      seen.add(v);
    }
    return v;
  };
  let value = this;
  if (typeof NodeList !== 'undefined' && (value instanceof NodeList || value instanceof HTMLCollection)) {
    value = Array.from(value);
  }
  let text;
  try { text = isNode(value) ? html(value) : JSON.stringify(value, replacer); } catch (e) { text = String(value); }
  if (text === undefined) text = String(value);
  return {length: text.length, text: text.slice(0, limit)};
}"""


async def _cdp(session: BrowserSession) -> Any:
    page = await session.current_page()
    try:
        return await page.context.new_cdp_session(page)
    except Exception as err:
        raise ToolError(f"could not attach to the page: {first_line(err)}") from None


async def _detach(cdp: Any) -> None:
    with contextlib.suppress(Exception):
        await cdp.detach()


def _cap(text: str, total: int, limit: int) -> str:
    if total <= limit:
        return text
    return f"{text}\n[cut at {limit:,} of {total:,} characters; [plugins.browser] eval_chars sets the cap]"


def _thrown(details: dict[str, Any]) -> str:
    exception = details.get("exception") or {}
    text = exception.get("description") or details.get("text") or "an exception"
    return first_line(Exception(text))


async def evaluate(session: BrowserSession, expression: str) -> str:
    """The value of ``expression`` in the page, as ``Result (type): text``."""
    settings = session.engine.settings
    cdp = await _cdp(session)
    try:
        params = {
            "expression": expression,
            "replMode": True,
            "awaitPromise": True,
            "userGesture": True,
            "objectGroup": "hermes",
            "timeout": int(settings.eval_timeout * 1000),  # synchronous code: terminated after this
        }
        late = ToolError(
            f"the script did not finish within {settings.eval_timeout:g} s ([plugins.browser] eval_timeout); "
            "it was stopped"
        )
        started = time.monotonic()
        try:
            reply = await asyncio.wait_for(cdp.send("Runtime.evaluate", params), settings.eval_timeout + 1)
        except TimeoutError:  # still awaiting a promise
            with contextlib.suppress(Exception):
                await cdp.send("Runtime.terminateExecution")
            raise late from None
        except Exception as err:
            if time.monotonic() - started >= settings.eval_timeout:  # Chromium ended a busy script
                raise late from None
            raise ToolError(f"could not evaluate: {first_line(err)}") from None
        if reply.get("exceptionDetails"):
            raise ToolError(f"the script threw: {_thrown(reply['exceptionDetails'])}")
        value = reply.get("result") or {}
        kind = value.get("type", "undefined")
        subtype = value.get("subtype")
        label = f"{kind} ({subtype})" if subtype and subtype != "null" else kind
        if "objectId" in value:
            rendered = await cdp.send(
                "Runtime.callFunctionOn",
                {
                    "objectId": value["objectId"],
                    "functionDeclaration": _RENDER_JS,
                    "arguments": [{"value": settings.eval_chars}],
                    "returnByValue": True,
                },
            )
            shown = (rendered.get("result") or {}).get("value") or {}
            text = _cap(str(shown.get("text", "")), int(shown.get("length", 0)), settings.eval_chars)
        elif "unserializableValue" in value:
            text = str(value["unserializableValue"])
        elif kind == "undefined":
            text = "undefined"
        elif kind == "string":
            raw = str(value.get("value", ""))
            label = f"string, {len(raw):,} characters"
            text = _cap(raw[: settings.eval_chars], len(raw), settings.eval_chars)
        else:
            text = json.dumps(value.get("value"), ensure_ascii=False)
        return f"Result ({label}): {text}"
    finally:
        with contextlib.suppress(Exception):
            await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": "hermes"})
        await _detach(cdp)


def _urls(value: Any, key: str = "") -> list[str]:
    """Every string under a key that names a URL (``url``, ``frameURL``, ``baseUrl``...), however deep."""
    if isinstance(value, dict):
        return [u for k, v in value.items() for u in _urls(v, str(k))]
    if isinstance(value, list):
        return [u for v in value for u in _urls(v, key)]
    if isinstance(value, str) and key.lower().endswith("url"):
        return [value]
    return []


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return {str(k) for k in value} | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def refusal(method: str, params: dict[str, Any], policy: Any) -> str | None:
    """Why ``method`` with ``params`` may not be sent (None when it may); see the module docstring."""
    from hermes_core.security import check_url

    domain = method.partition(".")[0]
    if method not in _ALLOWED and domain in _REFUSED_DOMAINS:
        return f"the {domain} domain acts beyond this page (the whole browser, other tabs or sessions)"
    if method in _REFUSED_METHODS:
        return f"{method} reads or writes files of the machine"
    foreign = sorted(_keys(params) & _FOREIGN_KEYS)
    if foreign:
        return f"{', '.join(foreign)} would reach another target or browser context than this page"
    for url in _urls(params):
        if url in ("", "about:blank"):
            continue
        try:
            verdict = check_url(url, policy)
        except ValueError as err:
            return f"{url!r} is not a usable URL: {err}"
        if not verdict.allowed:
            return f"{url}: {verdict.reason}"
    return None


async def send(session: BrowserSession, method: str, params: dict[str, Any], limit: int) -> str:
    """Send one command to the page's DevTools session; its JSON result, cut at ``limit`` characters."""
    cdp = await _cdp(session)
    try:
        try:
            reply = await cdp.send(method, params)
        except Exception as err:
            raise ToolError(f"{method} failed: {first_line(err)}") from None
    finally:
        await _detach(cdp)
    text = json.dumps(reply, ensure_ascii=False)
    return f"{method} returned: {_cap(text[:limit], len(text), limit)}"
