"""``video_generate`` end to end against local servers speaking OpenAI's Videos API and Luma Dream Machine's, and
its schema, which shows only the configured provider's options."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_httpserver import HTTPServer

from hermes_core import ToolSystem

Configure = Callable[..., ToolSystem]
MP4 = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + bytes(200)
KEY = "vidkey-0b1c2d3e4f5a6978"


def _properties(system: ToolSystem) -> dict[str, Any]:
    (tool,) = [d for d in system.definitions(search="off") if d["function"]["name"] == "video_generate"]
    return dict(tool["function"]["parameters"]["properties"])


def _openai(configure: Configure, base: str, secret: Callable[[str], Any], **extra: Any) -> ToolSystem:
    settings = {"api_key": secret(KEY), "base_url": f"{base}/v1", "poll_seconds": 0.01, **extra}
    return configure(video=settings)


def _luma(configure: Configure, base: str, secret: Callable[[str], Any], **extra: Any) -> ToolSystem:
    settings = {"provider": "luma", "api_key": secret(KEY), "base_url": base, "poll_seconds": 0.01, **extra}
    return configure(video=settings)


def test_schema_shows_only_the_configured_providers_options(
    configure: Configure, base: str, secret: Callable[[str], Any]
) -> None:
    sora = _properties(_openai(configure, base, secret))
    luma = _properties(_luma(configure, base, secret))
    assert set(sora) == {"prompt", "job_id", "seconds", "size"}
    assert set(luma) == {"prompt", "job_id", "aspect_ratio", "resolution", "duration", "loop"}
    assert sora["seconds"]["enum"] == [4, 8, 12] and "9:16" in luma["aspect_ratio"]["enum"]


def test_openai_job_is_started_polled_and_downloaded(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    httpserver.expect_request("/v1/videos", method="POST", headers=auth).respond_with_json(
        {"id": "video_abc123", "object": "video", "model": "sora-2", "status": "queued", "progress": 0}
    )
    httpserver.expect_oneshot_request(
        "/v1/videos/video_abc123", method="GET", headers=auth
    ).respond_with_json({"id": "video_abc123", "status": "in_progress", "progress": 40})
    httpserver.expect_request("/v1/videos/video_abc123", method="GET", headers=auth).respond_with_json(
        {"id": "video_abc123", "status": "completed", "progress": 100, "seconds": "8", "size": "1280x720"}
    )
    httpserver.expect_request("/v1/videos/video_abc123/content", headers=auth).respond_with_data(
        MP4, content_type="video/mp4"
    )
    system = _openai(configure, base, secret)
    outcome = system.call_outcome(
        "video_generate", {"prompt": "waves at dusk", "seconds": 8, "size": "1280x720"}
    )
    assert outcome.ok, outcome.result
    result = json.loads(outcome.result)
    assert result["status"] == "completed" and result["job_id"] == "video_abc123"
    (saved,) = result["files"]
    assert saved["mime_type"] == "video/mp4" and saved["path"] in result["message"]
    assert (
        Path(saved["path"]).read_bytes() == MP4
        and Path(saved["path"]).parent == system.data_dir / "media" / "video"
    )
    create = next(r for r, _ in httpserver.log if r.method == "POST")
    assert create.mimetype == "multipart/form-data"  # the documented request shape
    assert dict(create.form) == {
        "model": "sora-2",
        "prompt": "waves at dusk",
        "seconds": "8",
        "size": "1280x720",
    }
    polls = [r for r, _ in httpserver.log if r.path == "/v1/videos/video_abc123"]
    assert len(polls) == 2


def test_luma_job_and_its_asset_download(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    gen = "3f2b9a7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    httpserver.expect_request(
        "/generations/video",
        method="POST",
        headers={"Authorization": f"Bearer {KEY}"},
        json={"prompt": "a paper boat", "model": "ray-2", "aspect_ratio": "9:16", "loop": True},
    ).respond_with_json({"id": gen, "generation_type": "video", "state": "queued"}, status=201)
    httpserver.expect_oneshot_request(f"/generations/{gen}").respond_with_json(
        {"id": gen, "state": "dreaming"}
    )
    httpserver.expect_request(f"/generations/{gen}").respond_with_json(
        {
            "id": gen,
            "state": "completed",
            "assets": {"video": f"{base}/cdn/{gen}.mp4", "image": f"{base}/x.jpg"},
        }
    )
    httpserver.expect_request(f"/cdn/{gen}.mp4").respond_with_data(MP4, content_type="video/mp4")
    system = _luma(configure, base, secret)
    outcome = system.call_outcome(
        "video_generate", {"prompt": "a paper boat", "aspect_ratio": "9:16", "loop": True}
    )
    assert outcome.ok, outcome.result
    assert Path(json.loads(outcome.result)["files"][0]["path"]).read_bytes() == MP4
    cdn = [r for r, _ in httpserver.log if r.path.startswith("/cdn/")]
    assert cdn and "Authorization" not in cdn[0].headers


def test_a_slow_render_returns_its_job_id_and_a_later_call_collects_it(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/v1/videos", method="POST").respond_with_json(
        {"id": "video_slow", "status": "queued", "progress": 0}
    )
    system = _openai(configure, base, secret, wait_seconds=0)
    first = json.loads(system.call("video_generate", {"prompt": "a long take"}))
    assert first["status"] == "pending" and first["job_id"] == "video_slow" and first["files"] == []
    assert 'job_id="video_slow"' in first["message"]
    httpserver.expect_request("/v1/videos/video_slow").respond_with_json(
        {"id": "video_slow", "status": "completed"}
    )
    httpserver.expect_request("/v1/videos/video_slow/content").respond_with_data(
        MP4, content_type="video/mp4"
    )
    second = json.loads(system.call("video_generate", {"job_id": "video_slow"}))
    assert second["status"] == "completed" and len(second["files"]) == 1
    assert sum(1 for r, _ in httpserver.log if r.method == "POST") == 1  # collecting starts nothing new


def test_options_of_the_other_provider_are_refused_by_name(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    outcome = _luma(configure, base, secret).call_outcome("video_generate", {"prompt": "x", "seconds": 8})
    assert outcome.status == "error"
    assert "seconds is not an option of the luma video provider" in outcome.result
    assert "aspect_ratio, resolution, duration, loop" in outcome.result
    assert not httpserver.log


def test_failed_job_rejected_key_and_malformed_job(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    system = _luma(configure, base, secret)
    httpserver.expect_oneshot_request("/generations/video").respond_with_json(
        {"id": "g1", "state": "failed", "failure_reason": "prompt was flagged"}, status=201
    )
    failed = system.call_outcome("video_generate", {"prompt": "x"})
    assert failed.status == "error" and "job g1 failed: prompt was flagged" in failed.result
    httpserver.expect_oneshot_request("/generations/video").respond_with_json(
        {"detail": f"Invalid API key {KEY}"}, status=401
    )
    denied = system.call_outcome("video_generate", {"prompt": "x"})
    assert "rejected the credentials" in denied.result and "[plugins.video] api_key" in denied.result
    assert KEY not in denied.result
    httpserver.expect_oneshot_request("/generations/video").respond_with_json({"state": "queued"}, status=201)
    malformed = system.call_outcome("video_generate", {"prompt": "x"})
    assert "malformed reply" in malformed.result and "'id'" in malformed.result
    bad_id = system.call_outcome("video_generate", {"job_id": "../../etc/passwd"})
    assert "not a job id" in bad_id.result


def test_hidden_with_how_to_enable(configure: Configure) -> None:
    ok, reason = configure().availability_of("video_generate")
    assert not ok and "[plugins.video] api_key" in reason and "luma" in reason
