"""The search backends of ``web_search``: each one real HTTP API, its request and response shapes.

- SearXNG: ``GET <searxng_url>/search?q=...&format=json`` -> ``{"results": [{"title", "url", "content"}]}``
  (the instance must list ``json`` in ``search.formats``).
- Brave Search: ``GET /res/v1/web/search?q=...&count=N`` with ``X-Subscription-Token`` ->
  ``{"web": {"results": [{"title", "url", "description"}]}}``; errors ``{"error": {"code", "detail"}}``.
- Tavily: ``POST /search`` ``{"query", "max_results", "search_depth"}`` with ``Authorization: Bearer`` ->
  ``{"results": [{"title", "url", "content"}], "answer"}``; errors ``{"detail": {"error"}}``.
- Exa: ``POST /search`` ``{"query", "numResults", "type", "contents"}`` with ``x-api-key`` ->
  ``{"results": [{"title", "url", "highlights", "text", "publishedDate"}]}``; errors ``{"error"}``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._http import ServiceError, call_json
from ._web_settings import WebSettings

if TYPE_CHECKING:
    import httpx

NAMES = {"searxng": "SearXNG", "brave": "Brave Search", "tavily": "Tavily", "exa": "Exa"}
SNIPPET_CHARS = 300
_TAGS = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Hit:
    title: str
    url: str
    snippet: str = ""
    date: str = ""


@dataclass(frozen=True, slots=True)
class Answer:
    hits: list[Hit]
    summary: str = ""  # a direct answer some backends add (Tavily's "answer", SearXNG's "answers")


def _clean(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    clean: str = _SPACE.sub(" ", html.unescape(_TAGS.sub("", text))).strip()
    return clean if len(clean) <= SNIPPET_CHARS else clean[: SNIPPET_CHARS - 1].rstrip() + "…"


def _hits(items: Any, service: str, snippet_keys: tuple[str, ...], url_key: str = "url") -> list[Hit]:
    if not isinstance(items, list):
        raise ServiceError(f"{service} sent a malformed answer: results is not a list")
    out = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get(url_key), str):
            continue  # one odd entry should not lose the others
        snippet = ""
        for key in snippet_keys:
            value = item.get(key)
            if isinstance(value, list):
                value = " … ".join(v for v in value if isinstance(v, str))
            if isinstance(value, str) and value.strip():
                snippet = value
                break
        date = item.get("publishedDate") or item.get("published_date") or item.get("age") or ""
        out.append(
            Hit(_clean(item.get("title")) or item[url_key], item[url_key], _clean(snippet), _clean(date))
        )
    return out


def _object(body: Any, service: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ServiceError(f"{service} sent a malformed answer: expected a JSON object")
    return body


def searxng(client: httpx.Client, s: WebSettings, query: str, limit: int) -> Answer:
    service = NAMES["searxng"]
    body = _object(
        call_json(
            client,
            service,
            "GET",
            s.endpoints["searxng"] + "/search",
            params={"q": query, "format": "json", "pageno": 1},
            headers={"Accept": "application/json"},
            max_wait=s.max_retry_wait,
        ),
        service,
    )
    answers = [a if isinstance(a, str) else a.get("answer", "") for a in body.get("answers") or []]
    summary = next((_clean(a) for a in answers if isinstance(a, str) and a.strip()), "")
    return Answer(_hits(body.get("results", []), service, ("content",))[:limit], summary)


def brave(client: httpx.Client, s: WebSettings, query: str, limit: int) -> Answer:
    service = NAMES["brave"]
    body = _object(
        call_json(
            client,
            service,
            "GET",
            s.endpoints["brave"],
            params={"q": query, "count": min(limit, 20)},
            headers={"Accept": "application/json", "X-Subscription-Token": s.keys["brave"]},
            max_wait=s.max_retry_wait,
        ),
        service,
    )
    web = body.get("web") or {}  # absent when nothing matched
    if not isinstance(web, dict):
        raise ServiceError(f"{service} sent a malformed answer: 'web' is not an object")
    return Answer(_hits(web.get("results", []), service, ("description", "extra_snippets"))[:limit])


def tavily(client: httpx.Client, s: WebSettings, query: str, limit: int) -> Answer:
    service = NAMES["tavily"]
    body = _object(
        call_json(
            client,
            service,
            "POST",
            s.endpoints["tavily"],
            json={"query": query, "max_results": min(limit, 20), "search_depth": "basic"},
            headers={"Authorization": f"Bearer {s.keys['tavily']}"},
            max_wait=s.max_retry_wait,
        ),
        service,
    )
    return Answer(_hits(body.get("results", []), service, ("content",))[:limit], _clean(body.get("answer")))


def exa(client: httpx.Client, s: WebSettings, query: str, limit: int) -> Answer:
    service = NAMES["exa"]
    body = _object(
        call_json(
            client,
            service,
            "POST",
            s.endpoints["exa"],
            json={
                "query": query,
                "numResults": min(limit, 25),
                "type": "auto",
                "contents": {"highlights": {"maxCharacters": SNIPPET_CHARS}},
            },
            headers={"x-api-key": s.keys["exa"]},
            max_wait=s.max_retry_wait,
        ),
        service,
    )
    return Answer(_hits(body.get("results", []), service, ("highlights", "summary", "text"))[:limit])


BACKEND_FUNCS: dict[str, Callable[[httpx.Client, WebSettings, str, int], Answer]] = {
    "searxng": searxng,
    "brave": brave,
    "tavily": tavily,
    "exa": exa,
}


def search(client: httpx.Client, settings: WebSettings, query: str, limit: int) -> str:
    """Ask the configured backends in order until one answers; the text the model sees."""
    failures: list[str] = []
    for name in settings.backends:
        try:
            answer = BACKEND_FUNCS[name](client, settings, query, limit)
        except ServiceError as err:
            failures.append(err.message)
            continue
        return render(query, NAMES[name], answer, failures)
    raise ServiceError("web search failed: " + "; ".join(failures))


def render(query: str, service: str, answer: Answer, failures: list[str]) -> str:
    lines = [f'Results for "{query}" ({service}):']
    if failures:
        lines.insert(0, "(" + "; ".join(failures) + "; used the next backend)")
    if answer.summary:
        lines.append(f"Answer: {answer.summary}")
    if not answer.hits:
        lines.append("No results. Try other words or a broader query.")
    for i, hit in enumerate(answer.hits, 1):
        lines.append(f"{i}. {hit.title}" + (f" ({hit.date})" if hit.date else ""))
        lines.append(f"   {hit.url}")
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
    return "\n".join(lines)
