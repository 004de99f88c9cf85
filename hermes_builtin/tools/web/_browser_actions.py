"""What each browser tool does, as coroutines that run on the engine's loop (``engine.run(...)``).

Actions that change the page (navigate, click, type, press, back) answer with a short line about what
happened and a fresh compact snapshot, so the model has current refs without another call.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Any

from hermes_core import ToolError

from . import _snapshot
from ._browser_engine import BrowserSession, first_line

MAX_IMAGES = 100
_KEY = re.compile(r"^(?:(?:Control|Alt|Shift|Meta|ControlOrMeta)\+)*[A-Za-z0-9]{1,12}$|^[^\s]$")

_IMAGES_JS = """() => Array.from(document.images).map(i => ({
  src: i.currentSrc || i.src || '', alt: i.alt || '', w: i.naturalWidth, h: i.naturalHeight,
  shown: !!(i.offsetWidth || i.offsetHeight || i.getClientRects().length)
}))"""
_SCROLL_JS = """(delta) => {
  if (delta) window.scrollBy(0, delta * window.innerHeight * 0.85);
  const el = document.scrollingElement || document.documentElement;
  return {y: Math.round(window.scrollY), height: el.scrollHeight, view: window.innerHeight};
}"""


def _playwright_error() -> type[Exception]:
    from playwright.async_api import Error

    return Error


async def _settle(page: Any, timeout_ms: float = 3000) -> None:
    """Let a page that started loading get its document (a click that did not navigate returns at once)."""
    with contextlib.suppress(Exception):
        await page.wait_for_load_state("domcontentloaded", timeout=timeout_ms)


async def _header(session: BrowserSession, page: Any) -> str:
    title = ""
    with contextlib.suppress(Exception):
        title = await page.title()
    return f"Page: {title or '(no title)'} — {page.url}"


async def take_snapshot(session: BrowserSession, full: bool = False) -> str:
    """The current page's accessibility tree (compact unless ``full``), with a header line."""
    page = await session.current_page()
    try:
        raw = await page.aria_snapshot(mode="ai", timeout=session.engine.settings.action_timeout * 1000)
    except _playwright_error() as err:
        raise ToolError(f"could not read the page: {first_line(err)}") from None
    session.snapshotted = True
    session.refs = _snapshot.refs(raw)
    session.last_snapshot = raw
    text = raw if full else _snapshot.compact(raw)
    if not full:
        text = _snapshot.cut(
            text, session.engine.settings.snapshot_chars, "browser_snapshot full=true returns all of it"
        )
    return f"{await _header(session, page)}\n{text or '(empty page)'}"


async def navigate(session: BrowserSession, url: str) -> str:
    from hermes_core.security import check_url

    proxy = session.engine.proxy
    try:
        verdict = await asyncio.get_running_loop().run_in_executor(None, check_url, url, proxy.policy)
    except ValueError as err:
        raise ToolError(f"not a usable URL: {err}", retryable=False) from None
    if not verdict.allowed:
        raise ToolError(f"refused to open {url}: {verdict.reason}", retryable=False)
    page = await session.current_page()
    mark = proxy.mark
    try:
        response = await page.goto(url, wait_until="domcontentloaded")
    except _playwright_error() as err:
        blocked = proxy.blocked_since(mark)
        if blocked:
            raise ToolError(
                f"refused to open {blocked[0].target}: {blocked[0].reason}", retryable=False
            ) from None
        hint = "; it is a download: read it with web_extract" if "Download is starting" in str(err) else ""
        raise ToolError(f"could not open {url}: {first_line(err)}{hint}") from None
    blocked = proxy.blocked_since(mark)
    if any(b.target == page.url for b in blocked):  # the document itself (a redirect hop) was refused
        hit = next(b for b in blocked if b.target == page.url)
        raise ToolError(f"refused to open {hit.target} (reached from {url}): {hit.reason}", retryable=False)
    await _settle(page)
    status = f"HTTP {response.status}" if response is not None else "no response"
    note = ""
    if blocked:
        shown = "; ".join(f"{b.target} ({b.reason})" for b in blocked[:5])
        note = f"\nBlocked requests: {shown}"
    return f"Opened {page.url} ({status}).{note}\n{await take_snapshot(session)}"


async def _locate(session: BrowserSession, ref: str) -> Any:
    ref = ref.strip()
    if not session.snapshotted:
        raise ToolError(
            "no snapshot yet: call browser_snapshot (or browser_navigate) first, then use its refs"
        )
    if ref not in session.refs:
        raise ToolError(f"unknown ref {ref!r}: use a ref from the latest snapshot (e.g. e12)")
    page = await session.current_page()
    locator = page.get_by_ref(ref)
    try:
        count = await locator.count()
    except _playwright_error():
        count = 0
    if count == 0:
        raise ToolError(f"element {ref} is no longer on the page; take a new browser_snapshot")
    return locator


def _described(session: BrowserSession, ref: str) -> str:
    for line in session.last_snapshot.splitlines():
        if f"[ref={ref}]" in line:
            text = line.strip().lstrip("- ").split(" [ref=")[0]
            return f"{ref} ({text})"
    return ref


async def _after(session: BrowserSession, done: str) -> str:
    page = await session.current_page()
    await _settle(page)
    return f"{done}\n{await take_snapshot(session)}"


async def click(session: BrowserSession, ref: str) -> str:
    locator = await _locate(session, ref)
    what = _described(session, ref)
    try:
        await locator.click()
    except _playwright_error() as err:
        raise ToolError(f"could not click {what}: {first_line(err)}") from None
    return await _after(session, f"Clicked {what}.")


async def type_text(session: BrowserSession, ref: str, text: str, submit: bool) -> str:
    locator = await _locate(session, ref)
    what = _described(session, ref)
    try:
        await locator.fill(text)
        if submit:
            await locator.press("Enter")
    except _playwright_error() as err:
        raise ToolError(f"could not type into {what}: {first_line(err)}") from None
    return await _after(
        session, f"Typed {len(text)} characters into {what}{' and pressed Enter' if submit else ''}."
    )


async def press(session: BrowserSession, key: str) -> str:
    if not _KEY.match(key):
        raise ToolError(
            f"unknown key {key!r}: use a key name like Enter, Escape, Tab, ArrowDown or Control+a"
        )
    page = await session.current_page()
    try:
        await page.keyboard.press(key)
    except _playwright_error() as err:
        raise ToolError(f"could not press {key}: {first_line(err)}") from None
    return await _after(session, f"Pressed {key}.")


async def back(session: BrowserSession) -> str:
    page = await session.current_page()
    try:
        response = await page.go_back(wait_until="domcontentloaded")
    except _playwright_error() as err:
        raise ToolError(f"could not go back: {first_line(err)}") from None
    if response is None and page.url in ("about:blank", ""):
        return "No previous page in this tab's history."
    return await _after(session, f"Went back to {page.url}.")


async def scroll(session: BrowserSession, direction: str, pages: int) -> str:
    page = await session.current_page()
    delta = pages if direction == "down" else -pages
    try:
        where = await page.evaluate(_SCROLL_JS, delta)
    except _playwright_error() as err:
        raise ToolError(f"could not scroll: {first_line(err)}") from None
    y, height, view = int(where["y"]), int(where["height"]), int(where["view"])
    bottom = min(height, y + view)
    edge = " (bottom of the page)" if bottom >= height else " (top of the page)" if y == 0 else ""
    return f"Scrolled {direction}: showing {y}-{bottom} of {height} px{edge}."


async def images(session: BrowserSession) -> str:
    page = await session.current_page()
    try:
        found = await page.evaluate(_IMAGES_JS)
    except _playwright_error() as err:
        raise ToolError(f"could not list images: {first_line(err)}") from None
    if not found:
        return f"No images on {page.url}."
    lines = [f"{len(found)} image(s) on {page.url}:"]
    for i, img in enumerate(found[:MAX_IMAGES], 1):
        src = str(img["src"])
        if src.startswith("data:"):
            src = src[:40] + "… (inline data)"
        size = f"{img['w']}x{img['h']}" if img["w"] else "not loaded"
        alt = f' alt="{img["alt"]}"' if img["alt"] else ""
        hidden = "" if img["shown"] else " (hidden)"
        lines.append(f"{i}. {src}{alt} {size}{hidden}")
    if len(found) > MAX_IMAGES:
        lines.append(f"(and {len(found) - MAX_IMAGES} more)")
    return "\n".join(lines)


async def console(session: BrowserSession, clear: bool) -> str:
    messages = list(session.console)
    if clear:
        session.console.clear()
    if not messages:
        return "No console messages" + (" since the last check." if clear else ".")
    return f"{len(messages)} console message(s):\n" + "\n".join(messages)


async def screenshot(session: BrowserSession, full_page: bool) -> bytes:
    page = await session.current_page()
    try:
        data: bytes = await page.screenshot(type="png", full_page=full_page)
    except _playwright_error() as err:
        raise ToolError(f"could not take a screenshot: {first_line(err)}") from None
    return data
