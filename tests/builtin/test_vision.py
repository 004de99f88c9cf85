"""``vision_analyze`` against a local OpenAI-compatible server: the chat-completions request with a data-URL
image, images from files, URLs and data: URLs, and the endpoint's errors."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from web_support import ALLOW_LOOPBACK, make_png
from werkzeug import Request, Response

from hermes_core import ToolSystem

Make = Callable[..., ToolSystem]
PNG = make_png(3, 2)


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "vis-1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@pytest.fixture
def seen() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def endpoint(httpserver: HTTPServer, seen: list[dict[str, Any]]) -> HTTPServer:
    """A vision model that answers with what it was sent."""

    def answer(request: Request) -> Response:
        body = request.get_json()
        seen.append({"body": body, "auth": request.headers.get("Authorization")})
        image_url = body["messages"][0]["content"][1]["image_url"]["url"]
        mime, data = image_url[5:].split(";base64,")
        size = len(base64.b64decode(data))
        text = f"A {mime} image of {size} bytes; asked: {body['messages'][0]['content'][0]['text']}"
        return Response(json.dumps(_completion(text)), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(answer)
    return httpserver


def _system(make: Make, server: HTTPServer, **vision: Any) -> ToolSystem:
    settings = {"base_url": server.url_for("/v1"), "model": "vis-1", "api_key": "sk-test-vision", **vision}
    return make(config={"plugins": {"vision": settings, "web": ALLOW_LOOPBACK}})


def test_hidden_until_a_model_is_configured(
    make_builtin_system: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = make_builtin_system()
    assert (
        bare.hidden()["vision_analyze"]
        == "no vision model configured: set base_url and model in [plugins.vision]"
    )
    monkeypatch.delenv("VISION_KEY_FOR_TEST", raising=False)
    unset = make_builtin_system(
        config={
            "plugins": {
                "vision": {"base_url": "http://x/v1", "model": "m", "api_key": {"env": "VISION_KEY_FOR_TEST"}}
            }
        }
    )
    assert "api_key is empty" in unset.hidden()["vision_analyze"]


def test_a_workspace_image_goes_as_a_data_url(
    endpoint: HTTPServer, seen: list[dict[str, Any]], make_builtin_system: Make, workspace: Path
) -> None:
    (workspace / "shots").mkdir()
    (workspace / "shots" / "chart.png").write_bytes(PNG)
    system = _system(make_builtin_system, endpoint, max_tokens=300, detail="low")
    out = system.call("vision_analyze", {"image": "shots/chart.png", "question": "What colour is it?"})
    assert out == f"A image/png image of {len(PNG)} bytes; asked: What colour is it?"
    sent = seen[0]
    assert sent["auth"] == "Bearer sk-test-vision"
    assert sent["body"]["model"] == "vis-1" and sent["body"]["max_tokens"] == 300
    content = sent["body"]["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "What colour is it?"}
    assert content[1]["type"] == "image_url" and content[1]["image_url"]["detail"] == "low"
    assert content[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()


def test_urls_and_data_urls(endpoint: HTTPServer, make_builtin_system: Make) -> None:
    endpoint.expect_request("/pics/cat.png").respond_with_data(PNG, content_type="image/png")
    system = _system(make_builtin_system, endpoint)
    assert "image/png image of" in system.call("vision_analyze", {"image": endpoint.url_for("/pics/cat.png")})
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert "Describe this image" in system.call("vision_analyze", {"image": data_url})


def test_a_url_image_obeys_the_network_policy(endpoint: HTTPServer, make_builtin_system: Make) -> None:
    endpoint.expect_request("/pics/cat.png").respond_with_data(PNG, content_type="image/png")
    settings = {"base_url": endpoint.url_for("/v1"), "model": "vis-1"}
    system = make_builtin_system(config={"plugins": {"vision": settings}})  # no allow_networks for fetches
    outcome = system.call_outcome("vision_analyze", {"image": endpoint.url_for("/pics/cat.png")})
    assert outcome.status == "error" and "is a loopback address" in outcome.result
    assert not any(r.path == "/pics/cat.png" for r, _ in endpoint.log)


@pytest.mark.parametrize(
    ("image", "needle"),
    [
        ("notes.txt", "not a supported image"),
        ("missing.png", "image file not found: missing.png"),
        ("data:image/png,rawbytes", "must be base64-encoded"),
        ("data:image/png;base64,@@@", "not valid base64"),
        ("ftp://example.org/a.png", "unsupported image source"),
        ("../user/.ssh/id_rsa", "an SSH private key"),
    ],
)
def test_bad_images(
    image: str, needle: str, endpoint: HTTPServer, make_builtin_system: Make, workspace: Path, fake_home: Path
) -> None:
    (workspace / "notes.txt").write_text("not an image")
    (fake_home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n")
    outcome = _system(make_builtin_system, endpoint).call_outcome("vision_analyze", {"image": image})
    assert outcome.status in ("error", "denied")
    assert needle in outcome.result


def test_endpoint_errors(httpserver: HTTPServer, make_builtin_system: Make, workspace: Path) -> None:
    (workspace / "a.png").write_bytes(PNG)
    path = "/v1/chat/completions"
    httpserver.expect_oneshot_request(path).respond_with_json(
        {
            "error": {
                "message": "Rate limit reached for requests",
                "type": "requests",
                "code": "rate_limit_exceeded",
            }
        },
        status=429,
        headers={"Retry-After": "0"},
    )
    httpserver.expect_oneshot_request(path).respond_with_json(_completion("fine after a retry"))
    httpserver.expect_oneshot_request(path).respond_with_json(
        {"error": {"message": "Incorrect API key provided: sk-test***", "type": "invalid_request_error"}},
        status=401,
    )
    httpserver.expect_oneshot_request(path).respond_with_json({"choices": []})
    httpserver.expect_oneshot_request(path).respond_with_json(
        {"choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "content_filter"}]}
    )
    httpserver.expect_oneshot_request(path).respond_with_data("<html>502 Bad Gateway</html>", status=502)
    system = _system(make_builtin_system, httpserver)
    call = lambda: system.call_outcome("vision_analyze", {"image": "a.png"})  # noqa: E731
    assert call().result == "fine after a retry"
    unauthorized = call()
    assert unauthorized.status == "error"
    assert "refused the request (HTTP 401: Incorrect API key provided" in unauthorized.result
    assert "no choices[0].message.content" in call().result
    assert "empty answer (finish_reason='content_filter')" in call().result
    assert "answered HTTP 502: <html>502 Bad Gateway</html>" in call().result


def test_content_parts_answers_are_joined(
    httpserver: HTTPServer, make_builtin_system: Make, workspace: Path
) -> None:
    (workspace / "a.png").write_bytes(PNG)
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        {
            "choices": [
                {
                    "message": {
                        "content": [{"type": "text", "text": "part one, "}, {"type": "text", "text": "two"}]
                    }
                }
            ]
        }
    )
    assert (
        _system(make_builtin_system, httpserver).call("vision_analyze", {"image": "a.png"}) == "part one, two"
    )
