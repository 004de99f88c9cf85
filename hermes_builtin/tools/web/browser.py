"""The "browser" toolset: a real headless Chromium driven through Playwright (``hermes-tools[browser]``).

One browser per tool system, one context (cookies, pages) per session; every request the page makes goes
through the network policy (``_browser_proxy``). Handlers are async and hand their work to the engine's own
loop (``_browser_engine``). Hidden, with the reason, when Playwright or Chromium is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

if TYPE_CHECKING:
    from ._browser_engine import BrowserEngine, BrowserSession
    from ._browser_settings import BrowserSettings

TOOLSET = "browser"
REF = {"type": "string", "description": "Element ref from the latest snapshot, e.g. e12."}
_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

NAVIGATE_DESCRIPTION = (
    "Open a URL in a headless browser (runs JavaScript, keeps cookies for the session) and get a snapshot of "
    "the page: its elements with refs (e12) for browser_click/browser_type. Use it for pages that need "
    "JavaScript, logins or interaction"
)
NAVIGATE_PREFER = "; prefer web_search for simple lookups."


def _schema(
    name: str, description: str, properties: Mapping[str, Any] | None = None, required: Any = ()
) -> Any:
    params: dict[str, Any] = (
        dict(_NO_ARGS)
        if properties is None
        else {
            "type": "object",
            "properties": dict(properties),
            "additionalProperties": False,
        }
    )
    if required:
        params["required"] = list(required)
    return {"name": name, "description": description, "parameters": params}


SCHEMAS: dict[str, Any] = {
    "browser_navigate": _schema(
        "browser_navigate",
        NAVIGATE_DESCRIPTION + NAVIGATE_PREFER,
        {"url": {"type": "string", "description": "http(s) URL."}},
        ["url"],
    ),
    "browser_snapshot": _schema(
        "browser_snapshot",
        "The current page as an accessibility tree with element refs (e12) for browser_click/browser_type. "
        "Compact by default; full=true keeps every node.",
        {"full": {"type": "boolean"}},
    ),
    "browser_click": _schema(
        "browser_click", "Click an element; returns the updated snapshot.", {"ref": REF}, ["ref"]
    ),
    "browser_type": _schema(
        "browser_type",
        "Replace the text of an input field, then optionally press Enter; returns the updated snapshot.",
        {
            "ref": REF,
            "text": {"type": "string"},
            "submit": {"type": "boolean", "description": "Press Enter."},
        },
        ["ref", "text"],
    ),
    "browser_scroll": _schema(
        "browser_scroll",
        "Scroll the page (to load more content or before browser_vision).",
        {
            "direction": {"type": "string", "enum": ["down", "up"]},
            "pages": {"type": "integer", "minimum": 1, "maximum": 10, "description": "Default 1."},
        },
        ["direction"],
    ),
    "browser_back": _schema("browser_back", "Go back to the previous page; returns its snapshot."),
    "browser_press": _schema(
        "browser_press",
        "Press a key on the focused element: Enter, Escape, Tab, ArrowDown, PageDown, Control+a...",
        {"key": {"type": "string"}},
        ["key"],
    ),
    "browser_get_images": _schema("browser_get_images", "List the page's images: URL, alt text, size."),
    "browser_console": _schema(
        "browser_console",
        "The page's console messages and uncaught JavaScript errors since the last call. With expression, first "
        "evaluate JavaScript in the page like the DevTools console (await works) and return its value.",
        {
            "expression": {"type": "string", "description": "JavaScript, e.g. document.title"},
            "clear": {"type": "boolean", "description": "Forget the messages after reading (default true)."},
        },
    ),
    "browser_dialog": _schema(
        "browser_dialog",
        "Answer the open alert/confirm/prompt dialog (the page waits for it); returns the updated snapshot.",
        {
            "action": {"type": "string", "enum": ["accept", "dismiss"]},
            "text": {"type": "string", "description": "What to type into a prompt (with accept)."},
        },
        ["action"],
    ),
    "browser_vision": _schema(
        "browser_vision",
        "Take a screenshot of the page and ask a vision model about it (layout, charts, captchas, images).",
        {
            "question": {"type": "string"},
            "full_page": {"type": "boolean", "description": "Whole page."},
            "annotate": {
                "type": "boolean",
                "description": "Box interactive elements, labelled with their refs.",
            },
        },
        ["question"],
    ),
    "browser_cdp": _schema(
        "browser_cdp",
        "Send a raw Chrome DevTools Protocol command to the current page and get its JSON result, for what the "
        "other browser tools cannot do (e.g. Network.getCookies, Emulation.setGeolocationOverride).",
        {
            "method": {"type": "string", "description": "Domain.method"},
            "params": {"type": "object", "description": "The command's parameters."},
        },
        ["method"],
    ),
}


def _settings(source: Any) -> BrowserSettings:
    from ._browser_settings import BrowserSettings

    return BrowserSettings.from_config(source.plugin_config(TOOLSET), source.plugin_config("web"))


async def _session(context: CallContext) -> tuple[BrowserEngine, BrowserSession]:
    """The engine of this system (started on first use) and the context of this call's session."""
    from ._browser_engine import BrowserEngine, BrowserSession
    from ._browser_settings import playwright_problem
    from ._web_settings import SettingsError

    problem = playwright_problem()
    if problem:
        raise ToolError(problem, retryable=False)
    try:
        settings = _settings(context)
    except SettingsError as err:
        raise ToolError(str(err), retryable=False) from None
    engine = context.stash("browser.engine", lambda: BrowserEngine(settings), BrowserEngine.close)
    await engine.started()
    session = await engine.run(engine.session(context.session_id))
    context.stash(f"browser.session:{context.session_id}", lambda: session, BrowserSession.close)
    return engine, session


async def _act(context: CallContext, action: Callable[[BrowserSession], Coroutine[Any, Any, str]]) -> str:
    """Run a page action on the engine's loop; a dialog it opens is reported, never waited on."""
    from ._browser_dialogs import guarded

    engine, session = await _session(context)
    return await engine.run(guarded(session, action(session)))


async def browser_navigate(url: str, *, context: CallContext) -> str:
    from . import _browser_actions as act

    return await _act(context, lambda session: act.navigate(session, url.strip()))


async def browser_snapshot(full: bool = False, *, context: CallContext) -> str:
    from . import _browser_actions as act

    return await _act(context, lambda session: act.take_snapshot(session, full))


async def browser_click(ref: str, *, context: CallContext) -> str:
    from . import _browser_actions as act

    return await _act(context, lambda session: act.click(session, ref))


async def browser_type(ref: str, text: str, submit: bool = False, *, context: CallContext) -> str:
    from . import _browser_actions as act

    return await _act(context, lambda session: act.type_text(session, ref, text, submit))


async def browser_scroll(direction: str, pages: int = 1, *, context: CallContext) -> str:
    from . import _browser_actions as act

    return await _act(context, lambda session: act.scroll(session, direction, pages))


async def browser_back(*, context: CallContext) -> str:
    from . import _browser_actions as act

    return await _act(context, act.back)


async def browser_press(key: str, *, context: CallContext) -> str:
    from . import _browser_actions as act

    return await _act(context, lambda session: act.press(session, key.strip()))


async def browser_get_images(*, context: CallContext) -> str:
    from . import _browser_actions as act

    return await _act(context, act.images)


async def _page_url(engine: BrowserEngine, session: BrowserSession) -> str:
    async def url() -> str:
        return str((await session.current_page()).url)

    return await engine.run(url())


async def browser_console(expression: str = "", clear: bool = True, *, context: CallContext) -> str:
    """Console messages; with ``expression``, its value first (``[approvals] browser_js``)."""
    import asyncio
    import hashlib

    from .. import _approvals
    from . import _browser_actions as act
    from . import _browser_devtools as devtools

    engine, session = await _session(context)
    result = ""
    if expression.strip():
        if _approvals.must_ask(context, "browser_js"):
            where = await _page_url(engine, session)
            digest = hashlib.sha256(expression.encode("utf-8", "surrogatepass")).hexdigest()
            preview = expression if len(expression) <= 2000 else expression[:2000] + " ..."
            await asyncio.to_thread(
                _approvals.ask_first,
                context,
                "browser_js",
                f"javascript sha256:{digest} on {where}",
                f"running JavaScript in {where}:\n{preview}",
            )
        result = await _act(context, lambda s: devtools.evaluate(s, expression)) + "\n"
    return result + await engine.run(act.console(session, clear))


async def browser_dialog(action: str, text: str | None = None, *, context: CallContext) -> str:
    from . import _browser_actions as act
    from ._browser_dialogs import answer

    engine, session = await _session(context)
    return await engine.run(answer(session, action == "accept", text, lambda: act.take_snapshot(session)))


async def browser_cdp(method: str, params: dict[str, Any] | None = None, *, context: CallContext) -> str:
    """One DevTools command to the current page (refused past the page; ``[approvals] browser_cdp``)."""
    import asyncio
    import json

    from .. import _approvals
    from . import _browser_devtools as devtools

    method = method.strip()
    params = params or {}
    if not method.count(".") == 1 or not all(part.isidentifier() for part in method.split(".")):
        raise ToolError(f"method must look like Domain.method (e.g. DOM.getDocument), got {method!r}")
    engine, session = await _session(context)
    refused = await asyncio.to_thread(devtools.refusal, method, params, engine.proxy.policy)
    if refused:
        raise ToolError(f"refused to send {method}: {refused}", retryable=False)
    where = await _page_url(engine, session)
    shown = json.dumps(params, sort_keys=True, ensure_ascii=False)
    await asyncio.to_thread(
        _approvals.ask_first,
        context,
        "browser_cdp",
        f"cdp {method} {shown} on {where}",
        f"sending the DevTools command {method} {shown[:2000]} to {where}",
    )
    limit = engine.settings.eval_chars
    return await _act(context, lambda s: devtools.send(s, method, params, limit))


async def browser_vision(
    question: str, full_page: bool = False, annotate: bool = False, *, context: CallContext
) -> str:
    """Screenshot the page (saved under the data dir) and ask the ``[plugins.vision]`` model about it."""
    import asyncio

    from hermes_core.fileio import atomic_write

    from . import _browser_actions as act
    from . import _browser_annotate, _vision, web
    from ._browser_dialogs import refuse_while_open
    from ._web_settings import SettingsError

    try:
        vision = _vision.settings_of(context)
        client = web.api_client(context, web.settings_of(context))
    except SettingsError as err:
        raise ToolError(str(err), retryable=False) from None
    engine, session = await _session(context)
    question = question.strip() or "Describe it."
    legend = ""

    async def shoot() -> bytes:
        nonlocal legend, question
        refuse_while_open(session)
        if not annotate:
            return await act.screenshot(session, full_page)
        image, drawn = await _browser_annotate.screenshot(session, full_page)
        legend = "\n\nBoxes drawn: " + (", ".join(map(str, drawn)) or "none (no interactive element in view)")
        question += (
            f"\n\nInteractive elements have magenta ({_browser_annotate.COLOR}) boxes labelled with their ref (e12); "
            "name the ref when you mention one."
        )
        return image

    image = await engine.run(shoot())
    path = context.data_dir / "browser" / "screenshots" / f"{context.call_id or 'latest'}.png"
    await asyncio.to_thread(atomic_write, path, image, fsync=False)
    answer = await asyncio.to_thread(_vision.analyze, client, vision, image, question)
    return f"{answer}{legend}\n\n(screenshot: {path})"


HANDLERS: dict[str, Callable[..., Any]] = {
    "browser_navigate": browser_navigate,
    "browser_snapshot": browser_snapshot,
    "browser_click": browser_click,
    "browser_type": browser_type,
    "browser_scroll": browser_scroll,
    "browser_back": browser_back,
    "browser_press": browser_press,
    "browser_get_images": browser_get_images,
    "browser_console": browser_console,
    "browser_dialog": browser_dialog,
    "browser_vision": browser_vision,
    "browser_cdp": browser_cdp,
}
TOOLS = tuple(HANDLERS)
EMOJI = {
    "browser_navigate": "🌐",
    "browser_vision": "📸",
    "browser_console": "🪵",
    "browser_get_images": "🖼️",
    "browser_dialog": "💬",
    "browser_cdp": "🛠️",
}


def browser_available(system: Any) -> tuple[bool, str] | Unavailable:
    """Shown when Playwright (new enough) and a Chromium are installed and ``[plugins.browser]`` is valid."""
    from ._browser_settings import playwright_problem
    from ._web_settings import SettingsError

    problem = playwright_problem()
    if problem:
        return Unavailable(problem, by_design=True)  # the optional [browser] extra or a Chromium is missing
    try:
        _settings(system)
    except SettingsError as err:
        return False, str(err)
    return True, ""


def vision_and_browser_available(system: Any) -> tuple[bool, str] | Unavailable:
    """browser_vision needs the browser and a vision model."""
    from ._vision import available

    for check in (browser_available, available):
        verdict = check(system)
        if isinstance(verdict, Unavailable) or not verdict[0]:
            return verdict
    return True, ""


def navigate_overrides(available: frozenset[str]) -> dict[str, str] | None:
    """Without web_search, do not tell the model to prefer it."""
    return None if "web_search" in available else {"description": NAVIGATE_DESCRIPTION + "."}


def register(registry: ToolRegistry) -> None:
    """Register the twelve browser tools (toolset "browser")."""
    for name, handler in HANDLERS.items():
        registry.register(
            name=name,
            toolset=TOOLSET,
            schema=SCHEMAS[name],
            handler=handler,
            check_fn=vision_and_browser_available if name == "browser_vision" else browser_available,
            emoji=EMOJI.get(name, "🧭"),
            max_result_size_chars=60_000,
            dynamic_schema_overrides=navigate_overrides if name == "browser_navigate" else None,
        )
