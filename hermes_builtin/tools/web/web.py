"""The "web" toolset: ``web_search`` (SearXNG, Brave, Tavily or Exa, from ``[plugins.web]``) and
``web_extract`` (a page as markdown, a PDF as text, paged).

``web_search`` is hidden until a backend is configured. ``web_extract`` reaches only public addresses unless
``[plugins.web] allow_networks`` says otherwise (``hermes_core.security.check_url``; every redirect hop too);
it takes up to ``MAX_URLS`` URLs in one call and fetches them in parallel, each through that policy.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

if TYPE_CHECKING:
    import httpx

    from ._web_extract import Page
    from ._web_settings import WebSettings

TOOLSET = "web"
SEARCH_LIMIT = 20
PAGE_CHARS = 20_000
MAX_PAGE_CHARS = 100_000
CACHE_SECONDS = 300.0
CACHE_PAGES = 16
MAX_URLS = 5

SEARCH_SCHEMA: dict[str, Any] = {
    "name": "web_search",
    "description": (
        "Search the web. Returns numbered results (title, URL, snippet). Read a result with web_extract."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 400},
            "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_LIMIT, "description": "Default 5."},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}

EXTRACT_SCHEMA: dict[str, Any] = {
    "name": "web_extract",
    "description": (
        "Fetch URLs (up to 5, in parallel) and return their text: HTML as clean markdown (navigation and "
        "scripts removed), PDF as text, plain text/JSON as is. Long texts come in pages: the footer gives the "
        "offset for the next one."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "urls": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_URLS},
            "url": {"type": "string", "description": "One http(s) URL (or use urls)."},
            "offset": {"type": "integer", "minimum": 0, "description": "Character to start at (default 0)."},
            "max_chars": {
                "type": "integer",
                "minimum": 1000,
                "maximum": MAX_PAGE_CHARS,
                "description": f"Page size (default {PAGE_CHARS}, shared by the URLs).",
            },
        },
        "additionalProperties": False,
    },
}


def settings_of(source: Any) -> WebSettings:
    """``[plugins.web]`` of a system or call context, parsed (``SettingsError`` when malformed)."""
    from ._web_settings import WebSettings

    return WebSettings.from_config(source.plugin_config(TOOLSET))


def _settings(context: CallContext) -> WebSettings:
    from ._web_settings import SettingsError

    try:
        return settings_of(context)
    except SettingsError as err:
        raise ToolError(str(err), retryable=False) from None


def api_client(context: CallContext, settings: WebSettings) -> httpx.Client:
    """The shared client for configured services (search APIs, the vision endpoint): not policy-guarded,
    since their addresses come from the operator's configuration, not from the model."""

    def make() -> httpx.Client:
        import httpx

        return httpx.Client(timeout=settings.timeout, headers={"User-Agent": settings.user_agent})

    return context.stash("web.api_client", make)


def fetch_client(context: CallContext, settings: WebSettings) -> httpx.Client:
    """The shared client for URLs the model chose: every connection vetted by ``[plugins.web]``'s policy."""

    def make() -> httpx.Client:
        from hermes_core.safehttp import guarded_client
        from hermes_core.security import NetworkPolicy

        return guarded_client(
            settings.policy or NetworkPolicy(),
            timeout=settings.timeout,
            headers={"User-Agent": settings.user_agent, "Accept": "text/html,application/pdf,*/*;q=0.8"},
        )

    return context.stash("web.fetch_client", make)


def web_search(query: str, limit: int = 5, *, context: CallContext) -> str:
    """Search with the configured backends (see ``_web_search``)."""
    from ._web_search import search

    settings = _settings(context)
    problem = settings.search_problem()
    if problem:
        raise ToolError(problem, retryable=False)
    if not query.strip():
        raise ToolError("query is empty")
    return search(api_client(context, settings), settings, query.strip(), limit)


class _PageCache:
    """Recently extracted pages, so paging through one does not fetch it again."""

    def __init__(self) -> None:
        self.pages: OrderedDict[str, tuple[float, Page]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, url: str) -> Page | None:
        with self.lock:
            hit = self.pages.get(url)
            if hit is None or hit[0] < time.monotonic():
                return None
            self.pages.move_to_end(url)
            return hit[1]

    def put(self, url: str, page: Page) -> None:
        with self.lock:
            self.pages[url] = (time.monotonic() + CACHE_SECONDS, page)
            self.pages.move_to_end(url)
            while len(self.pages) > CACHE_PAGES:
                self.pages.popitem(last=False)


def _refuse_literal(host: str, url: str, settings: WebSettings) -> None:
    """An address written into the URL (in any spelling, some of which httpx will not even parse) is judged
    here without a lookup; names are judged when the connection is made."""
    from hermes_core.security import NetworkPolicy, check_url, parse_ip_literal

    if parse_ip_literal(host) is not None:
        verdict = check_url(url, settings.policy or NetworkPolicy())
        if not verdict.allowed:
            raise ToolError(f"refused to fetch {url}: {verdict.reason}", retryable=False)


def web_extract(
    urls: list[str] | None = None,
    url: str | None = None,
    offset: int = 0,
    max_chars: int = PAGE_CHARS,
    *,
    context: CallContext,
) -> str:
    """A page of each URL's text, fetched in parallel (see ``EXTRACT_SCHEMA``)."""
    targets = list(dict.fromkeys(u.strip() for u in [*(urls or []), *([url] if url else [])] if u.strip()))
    if not targets:
        raise ToolError("give the http(s) URLs to read in 'urls'", retryable=False)
    if len(targets) > MAX_URLS:
        raise ToolError(f"at most {MAX_URLS} URLs per call; {len(targets)} were given", retryable=False)
    settings = _settings(context)
    if len(targets) == 1:
        return _extract(context, settings, targets[0], offset, max_chars)
    if offset:
        raise ToolError(
            "offset pages through one document: give its URL alone with the offset", retryable=False
        )
    import concurrent.futures as cf

    share = max(1000, max_chars // len(targets))

    def one(target: str) -> tuple[bool, str]:
        try:
            return True, _extract(context, settings, target, 0, share, again=f'urls=["{target}"] and ')
        except ToolError as err:
            return False, f"URL: {target}\nError: {err}"

    with cf.ThreadPoolExecutor(max_workers=len(targets), thread_name_prefix="hermes-extract") as pool:
        results = list(pool.map(one, targets))
    failed = sum(1 for ok, _ in results if not ok)
    if failed == len(results):
        raise ToolError("no URL could be read:\n\n" + "\n\n".join(text for _, text in results))
    head = f"[{len(results)} URLs: {len(results) - failed} read" + (f", {failed} failed]" if failed else "]")
    return head + "\n\n" + "\n\n---\n\n".join(text for _, text in results)


def _extract(
    context: CallContext, settings: WebSettings, url: str, offset: int, max_chars: int, again: str = ""
) -> str:
    """One page of one URL's text: the SSRF policy judges it, a recent fetch is reused for later pages."""
    from urllib.parse import urlsplit

    from ._web_extract import fetch, render_page

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError as err:
        raise ToolError(f"not a usable URL: {err}", retryable=False) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ToolError(f"not a usable URL: {url!r}; give a full http:// or https:// URL", retryable=False)
    _refuse_literal(parts.hostname, url, settings)
    cache: _PageCache = context.stash("web.pages", _PageCache)
    page = cache.get(url) if offset else None
    if page is None:
        page = fetch(fetch_client(context, settings), settings, url)
        cache.put(url, page)
    return render_page(page, offset, max_chars, again)


def search_available(system: Any) -> tuple[bool, str] | Unavailable:
    """web_search is usable when ``[plugins.web]`` names at least one usable backend."""
    from ._web_settings import SettingsError

    try:
        settings = settings_of(system)
    except SettingsError as err:
        return False, str(err)
    problem = settings.search_problem()
    if problem is None:
        return True, ""
    if not settings.backends and not settings.unusable:
        return Unavailable(problem, by_design=True)  # no backend configured at all: opt-in, not a problem
    return False, problem


def extract_available(system: Any) -> tuple[bool, str]:
    """web_extract needs its converters installed and a well-formed ``[plugins.web]``."""
    import importlib.util

    from ._web_settings import SettingsError

    for module, dist in (("markdownify", "markdownify"), ("bs4", "beautifulsoup4"), ("pypdf", "pypdf")):
        if importlib.util.find_spec(module) is None:
            return False, f"{dist} is not installed (pip install 'hermes-tools')"
    try:
        settings_of(system)
    except SettingsError as err:
        return False, str(err)
    return True, ""


def register(registry: ToolRegistry) -> None:
    """Register ``web_search`` and ``web_extract`` (toolset "web")."""
    registry.register(
        name="web_search",
        toolset=TOOLSET,
        schema=SEARCH_SCHEMA,
        handler=web_search,
        check_fn=search_available,
        emoji="🔍",
        max_result_size_chars=20_000,
        parallel_safe=True,
    )
    registry.register(
        name="web_extract",
        toolset=TOOLSET,
        schema=EXTRACT_SCHEMA,
        handler=web_extract,
        check_fn=extract_available,
        emoji="📄",
        max_result_size_chars=MAX_PAGE_CHARS + 2_000,
        parallel_safe=True,
    )
