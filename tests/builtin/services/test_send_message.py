"""``send_message`` to Telegram, Discord and Slack against a local server speaking each Bot/Web API's shapes."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from hermes_builtin.tools.services.send_message import split_text
from hermes_core import ToolSystem

Configure = Callable[..., ToolSystem]
TG_TOKEN = "7351928460:AAE_tg-fake-token-for-tests-Zq"
DC_TOKEN = "discordbot.fake-token.ForTests-123456"
SL_TOKEN = "slackbot-fake-token-for-tests-98765"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(100)


def _telegram(configure: Configure, base: str, secret: Callable[[str], Any], **extra: Any) -> ToolSystem:
    return configure(telegram={"bot_token": secret(TG_TOKEN), "base_url": base, **extra})


def _tg_ok(message_id: int) -> dict[str, Any]:
    return {
        "ok": True,
        "result": {"message_id": message_id, "chat": {"id": -100123, "type": "supergroup"}, "date": 1},
    }


def _client_logs(caplog: pytest.LogCaptureFixture) -> str:
    """Everything logged in this process except by the test server itself (werkzeug logs the paths it serves)."""
    return "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("werkzeug"))


def _platform_enum(system: ToolSystem) -> list[str]:
    (tool,) = [d for d in system.definitions(search="off") if d["function"]["name"] == "send_message"]
    return list(tool["function"]["parameters"]["properties"]["platform"]["enum"])


def test_split_text_prefers_boundaries() -> None:
    text = ("word " * 300).strip() + "\n\n" + ("more " * 300).strip()
    pieces = split_text(text, 2000)
    assert all(len(p) <= 2000 for p in pieces) and len(pieces) >= 2
    assert " ".join(" ".join(pieces).split()) == " ".join(text.split())
    assert pieces[0].endswith("word")  # cut at the paragraph break, not mid-word
    assert split_text("x" * 4500, 2000) == ["x" * 2000, "x" * 2000, "x" * 500]


def test_schema_lists_only_configured_platforms(
    configure: Configure, base: str, secret: Callable[[str], Any]
) -> None:
    assert _platform_enum(_telegram(configure, base, secret)) == ["telegram"]
    both = configure(telegram={"bot_token": secret(TG_TOKEN)}, slack={"bot_token": secret(SL_TOKEN)})
    assert _platform_enum(both) == ["telegram", "slack"]
    ok, reason = configure().availability_of("send_message")
    assert not ok and "[plugins.telegram] bot_token" in reason and "[plugins.slack] bot_token" in reason


def test_telegram_long_text_is_split_and_token_never_logged(
    configure: Configure,
    base: str,
    secret: Callable[[str], Any],
    httpserver: HTTPServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    ids = iter(range(40, 50))
    httpserver.expect_request(f"/bot{TG_TOKEN}/sendMessage", method="POST").respond_with_handler(
        lambda request: Response(json.dumps(_tg_ok(next(ids))), content_type="application/json")
    )
    system = _telegram(configure, base, secret, default_chat_id="-100123")
    text = "\n".join(f"line {i} " + "z" * 90 for i in range(60))  # ~6000 chars: two messages
    outcome = system.call_outcome("send_message", {"text": text})
    assert outcome.ok, outcome.result
    assert outcome.result == "Sent to Telegram chat -100123 (message ids 40, 41)."
    bodies = [json.loads(r.get_data()) for r, _ in httpserver.log]
    assert [b["chat_id"] for b in bodies] == ["-100123", "-100123"]
    assert "\n".join(b["text"] for b in bodies) == text and all(len(b["text"]) <= 4096 for b in bodies)
    assert "HTTP Request: POST" in _client_logs(caplog)  # httpx logged the request...
    assert TG_TOKEN not in _client_logs(caplog)  # ...without the token in its URL


def test_telegram_photo_with_caption_from_the_media_dir(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request(f"/bot{TG_TOKEN}/sendPhoto", method="POST").respond_with_json(_tg_ok(7))
    system = _telegram(configure, base, secret)
    image = system.data_dir / "media" / "images" / "image-1.png"
    image.parent.mkdir(parents=True)
    image.write_bytes(PNG)
    outcome = system.call_outcome(
        "send_message", {"target": "@news", "text": "Fresh picture", "file": str(image), "thread": "5"}
    )
    assert outcome.ok, outcome.result
    (request, _), *_ = httpserver.log
    assert request.form["chat_id"] == "@news" and request.form["caption"] == "Fresh picture"
    assert request.form["message_thread_id"] == "5"
    assert request.files["photo"].read() == PNG and request.files["photo"].filename == "image-1.png"


def test_telegram_errors(
    configure: Configure,
    base: str,
    secret: Callable[[str], Any],
    httpserver: HTTPServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    system = _telegram(configure, base, secret)
    path = f"/bot{TG_TOKEN}/sendMessage"
    httpserver.expect_oneshot_request(path).respond_with_json(
        {"ok": False, "error_code": 401, "description": f"Unauthorized: token {TG_TOKEN} is invalid"},
        status=401,
    )
    denied = system.call_outcome("send_message", {"target": "1", "text": "hi"})
    assert (
        "Telegram rejected the credentials" in denied.result
        and "[plugins.telegram] bot_token" in denied.result
    )
    assert TG_TOKEN not in denied.result and TG_TOKEN not in _client_logs(caplog)
    httpserver.expect_oneshot_request(path).respond_with_json(
        {"ok": False, "error_code": 400, "description": "Bad Request: chat not found"}, status=400
    )
    missing = system.call_outcome("send_message", {"target": "1", "text": "hi"})
    assert "Bad Request: chat not found" in missing.result
    httpserver.expect_oneshot_request(path).respond_with_json(
        {
            "ok": False,
            "error_code": 429,
            "description": "Too Many Requests: retry after 1",
            "parameters": {"retry_after": 1},
        },
        status=429,
    )
    httpserver.expect_oneshot_request(path).respond_with_json(_tg_ok(9))
    retried = system.call_outcome("send_message", {"target": "1", "text": "hi"})
    assert retried.ok and "message id 9" in retried.result
    httpserver.expect_oneshot_request(path).respond_with_data("<html>Bad Gateway</html>", status=502)
    down = system.call_outcome("send_message", {"target": "1", "text": "hi"})
    assert "server error" in down.result and "HTTP 502" in down.result
    httpserver.expect_oneshot_request(path).respond_with_json({"ok": True})
    odd = system.call_outcome("send_message", {"target": "1", "text": "hi"})
    assert "malformed reply" in odd.result


def test_discord_messages_never_mass_ping(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    counter = iter(range(1000, 1010))

    def create(request: Request) -> Response:
        assert request.headers["Authorization"] == f"Bot {DC_TOKEN}"
        return Response(
            json.dumps({"id": str(next(counter)), "channel_id": "555"}), content_type="application/json"
        )

    httpserver.expect_request("/channels/555/messages", method="POST").respond_with_handler(create)
    system = configure(discord={"bot_token": secret(DC_TOKEN), "base_url": base, "default_channel_id": "555"})
    image = system.data_dir / "media" / "images" / "chart.png"
    image.parent.mkdir(parents=True)
    image.write_bytes(PNG)
    outcome = system.call_outcome("send_message", {"text": "@everyone " + "a" * 2500, "file": str(image)})
    assert outcome.ok and "message ids 1000, 1001" in outcome.result, outcome.result
    first, second = (r for r, _ in httpserver.log)
    assert json.loads(first.get_data())["allowed_mentions"] == {"parse": ["users"]}
    payload = json.loads(second.form["payload_json"])
    assert payload["allowed_mentions"] == {"parse": ["users"]}
    assert payload["attachments"] == [{"id": 0, "filename": "chart.png"}]
    assert second.files["files[0]"].read() == PNG


def test_discord_refusal_and_bad_target(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/channels/555/messages").respond_with_json(
        {"message": "Missing Access", "code": 50001}, status=403
    )
    system = configure(discord={"bot_token": secret(DC_TOKEN), "base_url": base})
    refused = system.call_outcome("send_message", {"target": "555", "text": "hi"})
    assert "Discord refused" in refused.result and "Missing Access (code 50001)" in refused.result
    bad = system.call_outcome("send_message", {"target": "general", "text": "hi"})
    assert "a Discord target is a channel id" in bad.result


def test_slack_text_and_three_step_upload(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    auth = {"Authorization": f"Bearer {SL_TOKEN}"}
    httpserver.expect_request("/chat.postMessage", method="POST", headers=auth).respond_with_json(
        {"ok": True, "channel": "C0123", "ts": "1700000000.000100", "message": {"text": "hi"}}
    )
    httpserver.expect_request("/files.getUploadURLExternal", method="POST", headers=auth).respond_with_json(
        {"ok": True, "upload_url": f"{base}/upload/v1/ABC123", "file_id": "F0456"}
    )
    httpserver.expect_request("/upload/v1/ABC123", method="POST").respond_with_data("OK - 108")
    httpserver.expect_request("/files.completeUploadExternal", method="POST", headers=auth).respond_with_json(
        {"ok": True, "files": [{"id": "F0456", "title": "report.png"}]}
    )
    system = configure(slack={"bot_token": secret(SL_TOKEN), "base_url": base, "default_channel": "C0123"})
    image = system.data_dir / "media" / "images" / "report.png"
    image.parent.mkdir(parents=True)
    image.write_bytes(PNG)
    outcome = system.call_outcome(
        "send_message", {"text": "Intro\n\nThe chart:", "file": str(image), "thread": "1699.1"}
    )
    assert outcome.ok, outcome.result
    assert "Slack channel C0123" in outcome.result and "F0456" in outcome.result
    log = {r.path: r for r, _ in httpserver.log}
    assert dict(log["/files.getUploadURLExternal"].form) == {
        "filename": "report.png",
        "length": str(len(PNG)),
    }
    upload = log["/upload/v1/ABC123"]
    assert (
        upload.get_data() == PNG and "Authorization" not in upload.headers
    )  # pre-signed: no token sent there
    share = json.loads(log["/files.completeUploadExternal"].get_data())
    assert share == {
        "files": [{"id": "F0456", "title": "report.png"}],
        "channel_id": "C0123",
        "initial_comment": "Intro\n\nThe chart:",
        "thread_ts": "1699.1",
    }


@pytest.mark.parametrize(
    ("reply", "needle"),
    [
        ({"ok": False, "error": "invalid_auth"}, "Slack rejected the credentials (invalid_auth)"),
        ({"ok": False, "error": "not_in_channel"}, "invite the bot to the channel"),
        ({"ok": False, "error": "channel_not_found"}, "Slack refused sending a message: channel_not_found"),
        ({"channel": "C1"}, "malformed reply"),
    ],
)
def test_slack_errors_come_in_200_replies(
    configure: Configure,
    base: str,
    secret: Callable[[str], Any],
    httpserver: HTTPServer,
    reply: dict[str, Any],
    needle: str,
) -> None:
    httpserver.expect_request("/chat.postMessage").respond_with_json(reply)
    system = configure(slack={"bot_token": secret(SL_TOKEN), "base_url": base})
    outcome = system.call_outcome("send_message", {"target": "C1", "text": "hi"})
    assert outcome.status == "error" and needle in outcome.result


def test_slack_rate_limit_header(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/chat.postMessage").respond_with_json(
        {"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": "30"}
    )
    system = configure(slack={"bot_token": secret(SL_TOKEN), "base_url": base})
    outcome = system.call_outcome("send_message", {"target": "C1", "text": "hi"})
    assert "Slack is rate limiting" in outcome.result and "retry after 30 s" in outcome.result


def test_files_outside_the_media_dir_pass_the_path_guard(
    configure: Configure,
    base: str,
    secret: Callable[[str], Any],
    httpserver: HTTPServer,
    fake_home: Path,
    workspace: Path,
) -> None:
    httpserver.expect_request(f"/bot{TG_TOKEN}/sendDocument").respond_with_json(_tg_ok(3))
    system = _telegram(configure, base, secret)
    (workspace / "notes.txt").write_text("meeting notes")
    inside = system.call_outcome("send_message", {"target": "1", "file": "notes.txt"})
    assert inside.ok, inside.result
    assert httpserver.log[0][0].files["document"].read() == b"meeting notes"
    private = fake_home / ".ssh" / "id_ed25519"
    private.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    stolen = system.call_outcome("send_message", {"target": "1", "file": str(private)})
    assert stolen.status == "denied", stolen.result
    media = system.data_dir / "media" / "images"
    media.mkdir(parents=True)
    os.symlink(private, media / "innocent.png")  # a link out of the media dir is judged by its target
    linked = system.call_outcome("send_message", {"target": "1", "file": str(media / "innocent.png")})
    assert linked.status == "denied", linked.result
    assert len(httpserver.log) == 1


def test_argument_problems_are_clear(configure: Configure, secret: Callable[[str], Any]) -> None:
    system = configure(telegram={"bot_token": secret(TG_TOKEN)}, slack={"bot_token": secret(SL_TOKEN)})
    which = system.call_outcome("send_message", {"target": "1", "text": "hi"})
    assert "several platforms are configured (telegram, slack)" in which.result
    nowhere = system.call_outcome("send_message", {"platform": "slack", "text": "hi"})
    assert "give a 'target'" in nowhere.result and "default_channel" in nowhere.result
    empty = system.call_outcome("send_message", {"platform": "slack", "target": "C1", "text": "  "})
    assert "nothing to send" in empty.result
    other = system.call_outcome("send_message", {"platform": "discord", "target": "1", "text": "x"})
    assert other.status == "error" and "discord" in other.result
