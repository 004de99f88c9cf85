"""One headless Chromium per tool system, driven by Playwright's async API on a thread of its own.

Why a thread: Playwright keeps a live connection to its driver process, and the system's shared loop only runs
while calls are in flight; the sync API cannot run inside a running loop at all. So the engine owns an event
loop on a daemon thread that runs all the time, and the (async) tool handlers hand their work to it with
``await engine.run(coro)``, which works the same from ``call()`` and from ``await acall()`` and lets a timeout
cancel the work. Each session id gets its own browser context (cookies, storage, pages). All traffic goes
through ``GuardedProxy``. ``close()`` closes the contexts, the browser, Playwright and the proxy, then stops
the thread: no Chromium process outlives the system.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Coroutine
from typing import Any, TypeVar

from hermes_core import ToolError

from ._browser_proxy import GuardedProxy
from ._browser_settings import BrowserSettings

log = logging.getLogger("hermes.browser")
T = TypeVar("T")

# Headless, as root in a container (no sandbox, no GPU), and nothing that phones home on its own: the machine
# may have no network, and background traffic would only wait on the proxy.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--no-first-run",
    "--no-pings",
    "--metrics-recording-only",
    "--mute-audio",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)
CONSOLE_KEEP = 200


def first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else type(err).__name__


class BrowserSession:
    """The browser context of one session: its current page, console messages and refs."""

    def __init__(self, engine: BrowserEngine, session_id: str) -> None:
        self.engine = engine
        self.session_id = session_id
        self.context: Any = None
        self.page: Any = None
        self.console: deque[str] = deque(maxlen=CONSOLE_KEEP)
        self.snapshotted = False
        self.refs: set[str] = set()
        self.last_snapshot = ""
        self.closed = False
        self.dialog: Any = None  # the open dialog the page waits on, held for browser_dialog
        self.held: asyncio.Task[str] | None = None  # the action that was waiting when it opened
        self.dialog_open = asyncio.Event()  # binds to the engine's loop on first use
        self._answering: set[asyncio.Task[None]] = set()
        self._opening = asyncio.Lock()  # binds to the engine's loop on first use
        self._adopted: list[Any] = []

    async def ensure_open(self) -> None:
        async with self._opening:
            if self.context is None:
                await self._open()

    async def _open(self) -> None:
        settings = self.engine.settings
        context = await self.engine.browser.new_context(
            viewport={"width": settings.width, "height": settings.height},
            service_workers="block",
            accept_downloads=False,
        )
        context.set_default_timeout(settings.action_timeout * 1000)
        context.set_default_navigation_timeout(settings.navigation_timeout * 1000)
        context.on("page", self._adopt)
        self.context = context
        self._adopt(await context.new_page())  # the "page" event may have adopted it already

    def _adopt(self, page: Any) -> None:
        """A new page (the first one, a popup or a target=_blank link) becomes the current one."""
        if any(p is page for p in self._adopted):
            return
        self._adopted.append(page)
        page.on("console", lambda msg: self.console.append(_console_line(msg)))
        page.on("pageerror", lambda err: self.console.append(f"[pageerror] {first_line(err)}"))
        page.on("close", lambda closed: self._closed_page(closed))
        page.on("dialog", self._on_dialog)  # with a listener, Playwright no longer dismisses dialogs itself
        self.page = page
        self.snapshotted = False

    def _on_dialog(self, dialog: Any) -> None:
        """Hold the dialog for browser_dialog, or answer it at once (``dialogs`` = accept/dismiss, or a second one)."""
        what = describe_dialog(dialog)
        policy = self.engine.settings.dialogs
        if policy == "ask" and self.dialog is None:
            self.dialog = dialog
            self.dialog_open.set()
            self.console.append(f"[dialog] {what} is open")
            return
        accept = policy == "accept"
        why = "" if policy != "ask" else " (another dialog was open)"
        self.console.append(f"[dialog] {what} {'accepted' if accept else 'dismissed'}{why}")
        task = asyncio.ensure_future(_quietly(dialog.accept() if accept else dialog.dismiss()))
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    def forget_dialog(self) -> None:
        self.dialog = None
        self.dialog_open.clear()

    def _closed_page(self, page: Any) -> None:
        if self.dialog is not None and self.dialog.page is page:
            self.forget_dialog()
        self._adopted = [p for p in self._adopted if p is not page]
        if page is self.page and self.context is not None:
            alive = [p for p in self.context.pages if not p.is_closed()]
            self.page = alive[-1] if alive else None

    async def current_page(self) -> Any:
        if self.page is None or self.page.is_closed():
            self.page = None
            self._adopt(await self.context.new_page())
        return self.page

    async def aclose(self) -> None:
        self.closed = True
        if self.context is not None:
            with contextlib.suppress(Exception):
                await self.context.close()
            self.context = None

    def close(self) -> None:
        """Close the context from any thread but the engine's (the stash calls this)."""
        if not self.closed and self.engine.running:
            self.engine.run_sync(self.aclose(), timeout=10)


def describe_dialog(dialog: Any) -> str:
    """``confirm "Delete it?"`` (a prompt's default value too), the message cut to 300 characters."""
    message = " ".join(str(dialog.message).split())
    if len(message) > 300:
        message = message[:300] + "…"
    default = (
        f" (default {dialog.default_value!r})" if dialog.type == "prompt" and dialog.default_value else ""
    )
    return f'{dialog.type} "{message}"{default}'


async def _quietly(answer: Coroutine[Any, Any, Any]) -> None:
    with contextlib.suppress(Exception):  # the page may be gone by then
        await answer


def _console_line(msg: Any) -> str:
    where = ""
    with contextlib.suppress(Exception):
        loc = msg.location
        if loc and loc.get("url"):
            where = f" ({loc['url']}:{loc.get('lineNumber', 0) + 1})"
    return f"[{msg.type}] {msg.text}{where}"


class BrowserEngine:
    """The browser of one tool system (see the module docstring)."""

    def __init__(self, settings: BrowserSettings) -> None:
        from hermes_core.security import NetworkPolicy

        self.settings = settings
        self.proxy = GuardedProxy(settings.policy or NetworkPolicy())
        self.playwright: Any = None
        self.browser: Any = None
        self.sessions: dict[str, BrowserSession] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hermes-browser", daemon=True)
        self._thread.start()
        self._start: concurrent.futures.Future[None] | None = None
        self._lock = threading.Lock()
        self.running = True

    # -- running work on the engine's loop ----------------------------------------------------------------

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the engine's loop and wait for it without blocking the caller's loop.

        Cancelling the caller (a call timeout) cancels the work.
        """
        if not self.running:
            coro.close()
            raise ToolError("the browser has been closed")
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    def run_sync(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def started(self) -> None:
        """Start Chromium on first use (one start shared by concurrent callers; a failed start is retried)."""
        with self._lock:
            if self._start is None or (self._start.done() and self._start.exception() is not None):
                self._start = asyncio.run_coroutine_threadsafe(self._launch(), self._loop)
            start = self._start
        await asyncio.wrap_future(start)

    async def _launch(self) -> None:
        from playwright.async_api import Error, async_playwright

        await self.proxy.start()
        args = [
            *CHROMIUM_ARGS,
            f"--proxy-server=http://127.0.0.1:{self.proxy.port}",
            "--proxy-bypass-list=<-loopback>",  # loopback too goes through the proxy (and its policy)
            *self.settings.extra_args,
        ]
        try:
            self.playwright = await async_playwright().start()
            self.browser = await self.playwright.chromium.launch(
                executable_path=self.settings.executable,
                headless=True,
                args=args,
                timeout=60_000,
                handle_sigint=False,
                handle_sigterm=False,
                handle_sighup=False,
            )
        except Error as err:
            await self._stop_playwright()
            raise ToolError(
                f"could not start Chromium ({self.settings.executable}): {first_line(err)}", retryable=False
            ) from None

    async def session(self, session_id: str) -> BrowserSession:
        found = self.sessions.get(session_id)
        if found is None or found.closed:
            found = self.sessions[session_id] = BrowserSession(self, session_id)
        await found.ensure_open()
        return found

    # -- shutting down ------------------------------------------------------------------------------------

    async def _stop_playwright(self) -> None:
        if self.browser is not None:
            with contextlib.suppress(Exception):
                await self.browser.close()
            self.browser = None
        if self.playwright is not None:
            with contextlib.suppress(Exception):
                await self.playwright.stop()
            self.playwright = None

    async def _shutdown(self) -> None:
        for session in list(self.sessions.values()):
            await session.aclose()
        await self._stop_playwright()
        await self.proxy.close()

    def close(self) -> None:
        """Close every context, Chromium, Playwright's driver and the proxy; stop the engine's thread."""
        if not self.running:
            return
        self.running = False
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(30)
        except Exception:
            log.exception("closing the browser failed")
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()
