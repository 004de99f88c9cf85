"""``web_search`` end to end against local servers that speak each backend's real API: SearXNG, Brave Search,
Tavily and Exa, with their error bodies, rate limits (``Retry-After``) and malformed answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from hermes_core import ToolSystem

Make = Callable[..., ToolSystem]
BRAVE_PATH = "/res/v1/web/search"


def _system(make: Make, **web: Any) -> ToolSystem:
    return make(config={"plugins": {"web": web}})


def _urls(server: HTTPServer, backend: str) -> dict[str, Any]:
    return {
        "searxng": {"searxng_url": server.url_for("/")},
        "brave": {"brave_api_key": "brv-key", "brave_url": server.url_for(BRAVE_PATH)},
        "tavily": {"tavily_api_key": "tvly-key", "tavily_url": server.url_for("/search")},
        "exa": {"exa_api_key": "exa-key", "exa_url": server.url_for("/search")},
    }[backend]


def test_hidden_with_a_reason_until_a_backend_is_configured(
    make_builtin_system: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = make_builtin_system()
    assert "web_search" not in bare.available()
    assert "no search backend configured" in bare.hidden()["web_search"]
    assert "searxng_url" in bare.hidden()["web_search"]
    monkeypatch.delenv("BRAVE_KEY_FOR_TEST", raising=False)
    unset = make_builtin_system(config={"plugins": {"web": {"brave_api_key": {"env": "BRAVE_KEY_FOR_TEST"}}}})
    assert "brave: brave_api_key is empty" in unset.hidden()["web_search"]
    typo = make_builtin_system(config={"plugins": {"web": {"search": "bing", "brave_api_key": "k"}}})
    assert "unknown backend 'bing'" in typo.hidden()["web_search"]
    # called by name anyway, it refuses with the same reason and runs nothing
    refused = bare.call_outcome("web_search", {"query": "x"})
    assert refused.status == "error"
    assert "'web_search' is not available right now (no search backend configured" in refused.result


def test_searxng_json_api(httpserver: HTTPServer, make_builtin_system: Make) -> None:
    httpserver.expect_request(
        "/search", query_string={"q": "python asyncio", "format": "json", "pageno": "1"}
    ).respond_with_json(
        {
            "query": "python asyncio",
            "number_of_results": 0,
            "results": [
                {
                    "url": "https://docs.python.org/3/library/asyncio.html",
                    "title": "asyncio — Asynchronous I/O",
                    "content": "asyncio is a library to write <b>concurrent</b> code",
                    "engine": "duckduckgo",
                    "engines": ["duckduckgo", "brave"],
                    "score": 3.0,
                    "category": "general",
                },
                {
                    "url": "https://realpython.com/async-io-python/",
                    "title": "Async IO in Python",
                    "content": "",
                },
                {"title": "an entry without a url is skipped"},
            ],
            "answers": [],
            "suggestions": ["python asyncio tutorial"],
            "infoboxes": [],
        }
    )
    system = _system(make_builtin_system, **_urls(httpserver, "searxng"))
    out = system.call("web_search", {"query": "python asyncio"})
    assert out == (
        'Results for "python asyncio" (SearXNG):\n'
        "1. asyncio — Asynchronous I/O\n"
        "   https://docs.python.org/3/library/asyncio.html\n"
        "   asyncio is a library to write concurrent code\n"
        "2. Async IO in Python\n"
        "   https://realpython.com/async-io-python/"
    )
    assert "1. asyncio" in system.call("web_search", {"query": "python asyncio", "limit": 1})
    assert "2. Async" not in system.call("web_search", {"query": "python asyncio", "limit": 1})


def test_searxng_without_the_json_format_says_how_to_fix_it(
    httpserver: HTTPServer, make_builtin_system: Make
) -> None:
    httpserver.expect_request("/search").respond_with_data("Forbidden", status=403)
    outcome = _system(make_builtin_system, **_urls(httpserver, "searxng")).call_outcome(
        "web_search", {"query": "x"}
    )
    assert outcome.status == "error"
    assert "SearXNG refused the request (HTTP 403: Forbidden)" in outcome.result


def test_brave_request_and_response_shapes(httpserver: HTTPServer, make_builtin_system: Make) -> None:
    httpserver.expect_request(
        BRAVE_PATH,
        method="GET",
        query_string={"q": "rust borrow checker", "count": "3"},
        headers={"X-Subscription-Token": "brv-key", "Accept": "application/json"},
    ).respond_with_json(
        {
            "type": "search",
            "query": {"original": "rust borrow checker"},
            "mixed": {"type": "mixed", "main": []},
            "web": {
                "type": "search",
                "results": [
                    {
                        "title": "References and Borrowing - The Rust Programming Language",
                        "url": "https://doc.rust-lang.org/book/ch04-02-references-and-borrowing.html",
                        "description": "The <strong>borrow checker</strong> enforces these rules &amp; more.",
                        "age": "March 3, 2024",
                        "language": "en",
                    }
                ],
            },
        }
    )
    out = _system(make_builtin_system, **_urls(httpserver, "brave")).call(
        "web_search", {"query": "rust borrow checker", "limit": 3}
    )
    assert out.splitlines() == [
        'Results for "rust borrow checker" (Brave Search):',
        "1. References and Borrowing - The Rust Programming Language (March 3, 2024)",
        "   https://doc.rust-lang.org/book/ch04-02-references-and-borrowing.html",
        "   The borrow checker enforces these rules & more.",
    ]


def test_brave_with_no_matches_and_with_a_bad_key(httpserver: HTTPServer, make_builtin_system: Make) -> None:
    httpserver.expect_request(BRAVE_PATH, query_string={"q": "zzqqxx", "count": "5"}).respond_with_json(
        {"type": "search", "query": {"original": "zzqqxx"}}
    )
    httpserver.expect_request(BRAVE_PATH).respond_with_json(
        {
            "type": "ErrorResponse",
            "error": {
                "id": "c2e1a3f0",
                "status": 422,
                "code": "SUBSCRIPTION_TOKEN_INVALID",
                "detail": "The provided subscription token is invalid.",
                "meta": {"component": "authentication"},
            },
            "time": 1700000000,
        },
        status=422,
    )
    system = _system(make_builtin_system, **_urls(httpserver, "brave"))
    assert "No results" in system.call("web_search", {"query": "zzqqxx"})
    bad = system.call_outcome("web_search", {"query": "anything"})
    assert bad.status == "error"
    assert "Brave Search answered HTTP 422: The provided subscription token is invalid." in bad.result


def test_tavily_request_and_response_shapes(httpserver: HTTPServer, make_builtin_system: Make) -> None:
    httpserver.expect_request(
        "/search",
        method="POST",
        headers={"Authorization": "Bearer tvly-key"},
        json={"query": "who wrote dune", "max_results": 2, "search_depth": "basic"},
    ).respond_with_json(
        {
            "query": "who wrote dune",
            "answer": "Frank Herbert wrote Dune (1965).",
            "images": [],
            "results": [
                {
                    "title": "Dune (novel) - Wikipedia",
                    "url": "https://en.wikipedia.org/wiki/Dune_(novel)",
                    "content": "Dune is a 1965 epic science fiction novel by American author Frank Herbert.",
                    "score": 0.98,
                    "raw_content": None,
                }
            ],
            "response_time": 1.09,
        }
    )
    out = _system(make_builtin_system, **_urls(httpserver, "tavily")).call(
        "web_search", {"query": "who wrote dune", "limit": 2}
    )
    assert "(Tavily)" in out
    assert "Answer: Frank Herbert wrote Dune (1965)." in out
    assert "1. Dune (novel) - Wikipedia\n   https://en.wikipedia.org/wiki/Dune_(novel)" in out


def test_exa_request_and_response_shapes(httpserver: HTTPServer, make_builtin_system: Make) -> None:
    def handler(request: Request) -> Response:
        body = request.get_json()
        assert request.headers["x-api-key"] == "exa-key"
        assert body["query"] == "vector databases" and body["numResults"] == 5 and body["type"] == "auto"
        assert body["contents"] == {"highlights": {"maxCharacters": 300}}
        return Response(
            json.dumps(
                {
                    "requestId": "b5947044c4b78efa9552a7c89b306d95",
                    "resolvedSearchType": "neural",
                    "results": [
                        {
                            "id": "https://example.org/vdb",
                            "title": "A survey of vector databases",
                            "url": "https://example.org/vdb",
                            "publishedDate": "2024-05-01T00:00:00.000Z",
                            "author": "A. Author",
                            "highlights": ["Vector databases index embeddings.", "They power retrieval."],
                            "highlightScores": [0.4, 0.3],
                        }
                    ],
                    "costDollars": {"total": 0.005},
                }
            ),
            content_type="application/json",
        )

    httpserver.expect_request("/search", method="POST").respond_with_handler(handler)
    out = _system(make_builtin_system, **_urls(httpserver, "exa")).call(
        "web_search", {"query": "vector databases"}
    )
    assert "1. A survey of vector databases (2024-05-01T00:00:00.000Z)" in out
    assert "Vector databases index embeddings. … They power retrieval." in out


@pytest.mark.parametrize("backend", ["searxng", "brave", "tavily", "exa"])
def test_rate_limit_with_a_short_retry_after_is_waited_out(
    backend: str, httpserver: HTTPServer, make_builtin_system: Make
) -> None:
    path = BRAVE_PATH if backend == "brave" else "/search"
    limited = {"error": {"code": "RATE_LIMITED", "detail": "Request rate limit exceeded"}}
    httpserver.expect_oneshot_request(path).respond_with_json(
        limited, status=429, headers={"Retry-After": "0"}
    )
    ok = {"results": [{"title": "after the wait", "url": "https://example.org/"}]}
    httpserver.expect_request(path).respond_with_json({"web": ok} if backend == "brave" else ok)
    out = _system(make_builtin_system, **_urls(httpserver, backend)).call("web_search", {"query": "q"})
    assert "1. after the wait" in out
    assert len(httpserver.log) == 2


def test_rate_limit_with_a_long_wait_tells_the_model_when_to_retry(
    httpserver: HTTPServer, make_builtin_system: Make
) -> None:
    httpserver.expect_request(BRAVE_PATH).respond_with_json(
        {"type": "ErrorResponse", "error": {"status": 429, "code": "RATE_LIMITED", "detail": "Too many"}},
        status=429,
        headers={"X-RateLimit-Reset": "42, 1419704", "X-RateLimit-Remaining": "0, 1999"},
    )
    system = _system(make_builtin_system, **_urls(httpserver, "brave"), max_retry_wait=5)
    outcome = system.call_outcome("web_search", {"query": "q"})
    assert outcome.status == "error"
    assert "Brave Search: rate limit reached (HTTP 429); retry after 42 s" in outcome.result
    assert len(httpserver.log) == 1  # no waiting when the wait is longer than allowed


@pytest.mark.parametrize(
    ("body", "content_type", "needle"),
    [
        ("<html>oops, a login page</html>", "text/html", "malformed answer (not JSON)"),
        ('["a", "list"]', "application/json", "expected a JSON object"),
        ('{"results": {"not": "a list"}}', "application/json", "results is not a list"),
    ],
)
def test_malformed_bodies_are_errors_not_crashes(
    body: str, content_type: str, needle: str, httpserver: HTTPServer, make_builtin_system: Make
) -> None:
    httpserver.expect_request("/search").respond_with_data(body, content_type=content_type)
    outcome = _system(make_builtin_system, **_urls(httpserver, "tavily")).call_outcome(
        "web_search", {"query": "q"}
    )
    assert outcome.status == "error" and needle in outcome.result
    assert outcome.error_kind == "tool_error"


def test_a_failing_backend_falls_back_to_the_next(httpserver: HTTPServer, make_builtin_system: Make) -> None:
    httpserver.expect_request(BRAVE_PATH).respond_with_json(
        {"error": {"detail": "upstream down"}}, status=502
    )
    httpserver.expect_request("/search").respond_with_json(
        {"results": [{"title": "from searxng", "url": "https://example.org/s", "content": "ok"}]}
    )
    system = _system(
        make_builtin_system,
        search=["brave", "searxng"],
        **_urls(httpserver, "brave"),
        **_urls(httpserver, "searxng"),
    )
    out = system.call("web_search", {"query": "q"})
    assert out.startswith("(Brave Search answered HTTP 502: upstream down; used the next backend)")
    assert "(SearXNG):\n1. from searxng" in out


def test_an_unreachable_service_is_reported(make_builtin_system: Make) -> None:
    system = _system(make_builtin_system, searxng_url="http://127.0.0.1:9", timeout=5)
    outcome = system.call_outcome("web_search", {"query": "q"})
    assert outcome.status == "error" and "SearXNG could not be reached (ConnectError" in outcome.result
