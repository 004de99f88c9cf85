"""``image_generate`` end to end against a local server speaking the OpenAI images API and fal.ai's shapes."""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from hermes_core import ToolSystem

Configure = Callable[..., ToolSystem]

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(64))
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(100))
KEY = "imgkey-7f3a9c2e51d04b8a"


def _openai(configure: Configure, base: str, secret: Callable[[str], Any], **extra: Any) -> ToolSystem:
    return configure(images={"api_key": secret(KEY), "base_url": f"{base}/v1", **extra})


def _files(outcome_result: str) -> list[dict[str, Any]]:
    data = json.loads(outcome_result)
    for item in data["files"]:
        assert item["path"] in data["message"]
    return list(data["files"])


def test_openai_images_are_saved_under_the_data_dir(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request(
        "/v1/images/generations",
        method="POST",
        headers={"Authorization": f"Bearer {KEY}"},
        json={"model": "gpt-image-1", "prompt": "a red fox", "size": "1536x1024", "n": 2},
    ).respond_with_json(
        {
            "created": 1,
            "data": [{"b64_json": base64.b64encode(PNG).decode()}] * 2,
            "usage": {"total_tokens": 9},
        }
    )
    system = _openai(configure, base, secret)
    outcome = system.call_outcome(
        "image_generate", {"prompt": "a red fox", "aspect_ratio": "landscape", "count": 2}
    )
    assert outcome.ok, outcome.result
    files = _files(outcome.result)
    assert len(files) == 2 and all(f["mime_type"] == "image/png" for f in files)
    for f in files:
        path = Path(f["path"])
        assert path.parent == system.data_dir / "media" / "images"
        assert path.read_bytes() == PNG and path.suffix == ".png" and f["bytes"] == len(PNG)
    assert not list(
        (system.data_dir / "media" / "images").glob(".*.tmp")
    )  # atomic writes leave nothing behind


def test_dalle3_urls_are_downloaded_and_revised_prompt_kept(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/v1/images/generations", method="POST").respond_with_json(
        {"data": [{"url": f"{base}/cdn/img-1.png", "revised_prompt": "A red fox in snow"}]}
    )
    httpserver.expect_request("/cdn/img-1.png").respond_with_data(PNG, content_type="image/png")
    system = _openai(configure, base, secret, model="dall-e-3")
    outcome = system.call_outcome("image_generate", {"prompt": "fox", "count": 2})
    assert outcome.ok, outcome.result
    assert len(_files(outcome.result)) == 2  # dall-e-3 makes one image per request: two requests
    assert json.loads(outcome.result)["revised_prompt"] == ["A red fox in snow"] * 2
    sent = [json.loads(r.get_data()) for r, _ in httpserver.log if r.path.endswith("generations")]
    assert [s["n"] for s in sent] == [1, 1] and sent[0]["response_format"] == "b64_json"
    assert sent[0]["size"] == "1024x1024"
    downloads = [r for r, _ in httpserver.log if r.path.startswith("/cdn/")]
    assert downloads and all(
        "Authorization" not in r.headers for r in downloads
    )  # the key stays with its API


def test_fal_provider(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request(
        "/fal-ai/flux/schnell",
        method="POST",
        headers={"Authorization": "Key fal-secret-123456"},
        json={"prompt": "a lighthouse", "image_size": "portrait_16_9", "num_images": 1},
    ).respond_with_json(
        {
            "images": [
                {"url": f"{base}/files/out.jpg", "width": 576, "height": 1024, "content_type": "image/jpeg"}
            ],
            "seed": 42,
            "has_nsfw_concepts": [False],
            "prompt": "a lighthouse",
        }
    )
    httpserver.expect_request("/files/out.jpg").respond_with_data(JPEG, content_type="image/jpeg")
    system = configure(images={"provider": "fal", "api_key": secret("fal-secret-123456"), "base_url": base})
    outcome = system.call_outcome("image_generate", {"prompt": "a lighthouse", "aspect_ratio": "portrait"})
    assert outcome.ok, outcome.result
    (saved,) = _files(outcome.result)
    assert saved["mime_type"] == "image/jpeg" and Path(saved["path"]).read_bytes() == JPEG


def test_rejected_key_is_explained_and_never_shown(
    configure: Configure,
    base: str,
    secret: Callable[[str], Any],
    httpserver: HTTPServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    httpserver.expect_request("/v1/images/generations").respond_with_json(
        {"error": {"message": f"Incorrect API key provided: {KEY}.", "type": "invalid_request_error"}},
        status=401,
    )
    outcome = _openai(configure, base, secret).call_outcome("image_generate", {"prompt": "x"})
    assert outcome.status == "error"
    assert (
        "rejected the credentials (HTTP 401" in outcome.result
        and "[plugins.images] api_key" in outcome.result
    )
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("werkzeug"))
    assert "HTTP Request: POST" in logged and KEY not in logged


def test_rate_limit_is_retried_once_when_the_wait_is_short(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_oneshot_request("/v1/images/generations").respond_with_json(
        {"error": {"message": "Rate limit reached"}}, status=429, headers={"Retry-After": "0.3"}
    )
    httpserver.expect_request("/v1/images/generations").respond_with_json(
        {"data": [{"b64_json": base64.b64encode(PNG).decode()}]}
    )
    started = time.monotonic()
    outcome = _openai(configure, base, secret).call_outcome("image_generate", {"prompt": "x"})
    assert outcome.ok, outcome.result
    assert time.monotonic() - started >= 0.3  # it waited as asked before the retry
    assert len(httpserver.log) == 2


def test_rate_limit_with_a_long_wait_is_reported_with_when_to_retry(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/v1/images/generations").respond_with_json(
        {"error": {"message": "Rate limit reached"}}, status=429, headers={"Retry-After": "120"}
    )
    outcome = _openai(configure, base, secret).call_outcome("image_generate", {"prompt": "x"})
    assert (
        outcome.status == "error"
        and "rate limiting" in outcome.result
        and "retry after 120 s" in outcome.result
    )
    assert len(httpserver.log) == 1  # no pointless retry


@pytest.mark.parametrize(
    ("reply", "needle"),
    [
        (Response("<html>oops</html>", content_type="text/html"), "malformed reply"),
        (Response(json.dumps({"data": "nope"}), content_type="application/json"), "no valid 'data'"),
        (
            Response(json.dumps({"data": [{"b64_json": "%%%"}]}), content_type="application/json"),
            "does not decode",
        ),
        (
            Response(
                json.dumps({"data": [{"b64_json": base64.b64encode(b"hello").decode()}]}),
                content_type="application/json",
            ),
            "not an image",
        ),
        (
            Response(json.dumps({"data": [{"nothing": 1}]}), content_type="application/json"),
            "neither b64_json nor url",
        ),
    ],
)
def test_malformed_replies_are_clear_errors(
    configure: Configure,
    base: str,
    secret: Callable[[str], Any],
    httpserver: HTTPServer,
    reply: Response,
    needle: str,
) -> None:
    httpserver.expect_request("/v1/images/generations").respond_with_response(reply)
    system = _openai(configure, base, secret)
    outcome = system.call_outcome("image_generate", {"prompt": "x"})
    assert outcome.status == "error" and outcome.error_kind == "tool_error", outcome.result
    assert needle in outcome.result
    assert not (system.data_dir / "media" / "images").exists() or not any(
        (system.data_dir / "media" / "images").iterdir()
    )


@pytest.mark.parametrize("declared", [True, False])
def test_downloads_over_the_size_limit_stop(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer, declared: bool
) -> None:
    big = PNG + b"\x00" * 1_500_000

    def stream(_request: Request) -> Response:
        if declared:
            return Response(big, content_type="image/png")
        return Response(
            iter([big[i : i + 65536] for i in range(0, len(big), 65536)]), content_type="image/png"
        )

    httpserver.expect_request("/v1/images/generations").respond_with_json(
        {"data": [{"url": f"{base}/big.png"}]}
    )
    httpserver.expect_request("/big.png").respond_with_handler(stream)
    system = _openai(configure, base, secret, max_download_mb=1)
    outcome = system.call_outcome("image_generate", {"prompt": "x"})
    assert outcome.status == "error" and "1 MB download limit" in outcome.result, outcome.result
    assert f"{base}/big.png" not in outcome.result  # provider URLs may be signed: never echoed


def test_hidden_with_how_to_enable_when_unconfigured(configure: Configure) -> None:
    system = configure()
    ok, reason = system.availability_of("image_generate")
    assert not ok and '[plugins.images] api_key = {env = "OPENAI_API_KEY"}' in reason
    assert "image_generate" not in {d["function"]["name"] for d in system.definitions()}
    outcome = system.call_outcome("image_generate", {"prompt": "x"})  # what the model can't see, it can't run
    assert outcome.status == "error"
    odd = configure(images={"provider": "midjourney", "api_key": "k"})
    assert "provider 'midjourney' is not supported" in odd.availability_of("image_generate")[1]
