"""``send_message``: post text (and optionally one file) to Telegram, Discord or Slack through their HTTP APIs.

Long texts are split at paragraph, line or word boundaries into the platform's message size. The ``platform``
list the model sees holds only the platforms that are configured. Discord messages never ping @everyone or
roles. A file inside ``<data dir>/media`` (what the media tools make) may be sent as is; any other path goes
through the path guard like ``read_file``.

Configuration, one table per platform::

    [plugins.telegram]
    bot_token = { env = "TELEGRAM_BOT_TOKEN" }
    default_chat_id = "-1001234567890"       # optional default target
    [plugins.discord]                        # shared with the discord tools
    bot_token = { env = "DISCORD_BOT_TOKEN" }
    default_channel_id = "123456789012345678"
    [plugins.slack]
    bot_token = { env = "SLACK_BOT_TOKEN" }  # xoxb-...
    default_channel = "C0123456789"

Each table also takes ``base_url`` (a proxy or a test server) and ``timeout`` (seconds per request).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

from . import _discord_api as dapi
from ._media import sniff
from ._remote import Service, field
from ._settings import as_float, as_text, require, section

if TYPE_CHECKING:
    import httpx

    from hermes_core import ToolSystem

TOOLSET = "messaging"
PLATFORMS = ("telegram", "discord", "slack")
TARGET_KEYS = {"telegram": "default_chat_id", "discord": "default_channel_id", "slack": "default_channel"}
LIMITS = {"telegram": 4096, "discord": 2000, "slack": 4000}  # characters per message
UPLOAD_LIMITS = {"telegram": 50_000_000, "discord": 10_000_000, "slack": 100_000_000}
ENABLE = (
    'set a bot token in the hermes config: [plugins.telegram] bot_token = {env = "TELEGRAM_BOT_TOKEN"}, '
    '[plugins.discord] bot_token = {env = "DISCORD_BOT_TOKEN"} or [plugins.slack] bot_token = '
    '{env = "SLACK_BOT_TOKEN"}'
)
_DESCRIPTION = (
    "Send a message to a chat on a messaging platform, optionally with one file (e.g. a path returned by "
    "image_generate or text_to_speech). target: Telegram chat id or @channel, Discord channel id, Slack channel "
    "id; omit it to use the configured default. thread: Telegram topic id or Slack thread ts."
)


def _schema(platforms: list[str]) -> dict[str, Any]:
    return {
        "description": _DESCRIPTION + f" Configured platforms: {', '.join(platforms)}.",
        "parameters": {
            "type": "object",
            "properties": {
                "platform": {
                    "type": "string",
                    "enum": platforms,
                    "description": "Optional when only one is set up.",
                },
                "target": {"type": "string", "minLength": 1, "maxLength": 200},
                "text": {"type": "string", "maxLength": 40_000},
                "file": {"type": "string", "description": "Path of a file to attach."},
                "thread": {"type": "string", "maxLength": 64},
            },
            "additionalProperties": False,
        },
    }


SCHEMA: dict[str, Any] = {"name": "send_message", **_schema(list(PLATFORMS))}


def configured(source: Any) -> list[str]:
    """The platforms with a bot token in the configuration of ``source`` (a system or a call context)."""
    return [p for p in PLATFORMS if as_text(section(source, p), "bot_token")]


def _check(system: ToolSystem) -> tuple[bool, str] | Unavailable:
    if configured(system):
        return True, ""
    return Unavailable(f"no messaging platform configured: {ENABLE}", by_design=True)  # opt-in


def _overrides(available: frozenset[str], system: ToolSystem) -> dict[str, Any] | None:
    """The ``platform`` enum narrowed to the platforms this system has a bot token for."""
    platforms = configured(system)
    return _schema(platforms) if platforms else None


def split_text(text: str, limit: int) -> list[str]:
    """Pieces of at most ``limit`` characters, cut at a paragraph, line or word boundary when there is one."""
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        window = rest[:limit]
        for sep in ("\n\n", "\n", " "):
            cut = window.rfind(sep)
            if cut >= limit // 2:  # a boundary in the second half; else a hard cut beats tiny pieces
                break
        else:
            cut = limit
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip("\n ")
    if rest.strip():
        pieces.append(rest)
    return pieces


def _read_attachment(context: CallContext, file: str, platform: str) -> tuple[str, bytes, str]:
    """``(file name, bytes, mime type)`` of a file to send; generated media passes, other paths are guarded."""
    raw = Path(file).expanduser()
    if not raw.is_absolute():
        raw = context.workspace / raw
    real = Path(os.path.realpath(raw))
    media = Path(os.path.realpath(context.data_dir / "media"))
    path = real if real.is_relative_to(media) else context.guard_path(file, "read")
    if not path.is_file():
        raise ToolError(f"{file} is not a file")
    size = path.stat().st_size
    limit = UPLOAD_LIMITS[platform]
    if size > limit:
        raise ToolError(
            f"{path.name} is {size / 1e6:.1f} MB; {platform} bots may send at most {limit / 1e6:g} MB"
        )
    data = path.read_bytes()
    kind = sniff(data)
    return path.name, data, kind[0] if kind else "application/octet-stream"


# -- Telegram -----------------------------------------------------------------------------------------------


def _telegram_detail(body: Any) -> str | None:
    return str(body.get("description")) if isinstance(body, dict) and body.get("description") else None


def _telegram(
    context: CallContext, target: str, pieces: list[str], attachment: Any, thread: str | None
) -> str:
    cfg = section(context, "telegram")
    token = require(cfg, "bot_token", 'set [plugins.telegram] bot_token = {env = "TELEGRAM_BOT_TOKEN"}')
    base = as_text(cfg, "base_url", "https://api.telegram.org") or "https://api.telegram.org"
    api = Service(
        "Telegram",
        f"{base.rstrip('/')}/bot{token}",
        secrets=[token],
        auth_hint="Check [plugins.telegram] bot_token (from @BotFather).",
        timeout=as_float(cfg, "timeout", 30.0, 0.1, 300.0),
        detail=_telegram_detail,
    )
    extra: dict[str, Any] = {}
    if thread:
        if not thread.isdigit():
            raise ToolError("Telegram 'thread' is a forum topic id (a number)")
        extra["message_thread_id"] = int(thread)
    ids: list[str] = []

    def sent(reply: Any, what: str) -> None:
        if not isinstance(reply, dict) or reply.get("ok") is not True:
            raise ToolError(f"Telegram refused {what}: {_telegram_detail(reply) or 'no reason given'}")
        result = field(reply, "result", dict, "Telegram", what)
        ids.append(str(result.get("message_id")))

    caption = None
    if attachment is not None and pieces and len(pieces[-1]) <= 1024:
        caption = pieces.pop()  # the last piece rides along as the file's caption
    for piece in pieces:
        sent(api.call(context, "POST", "sendMessage", what="sending a message",
                      json={"chat_id": target, "text": piece, **extra}), "sending a message")  # fmt: skip
    if attachment is not None:
        name, data, mime = attachment
        method, part = (
            ("sendPhoto", "photo") if mime in ("image/png", "image/jpeg", "image/webp")
            else ("sendVideo", "video") if mime == "video/mp4"
            else ("sendAudio", "audio") if mime in ("audio/mpeg", "audio/mp4")
            else ("sendVoice", "voice") if mime == "audio/ogg"
            else ("sendDocument", "document")
        )  # fmt: skip
        form = {"chat_id": target, **{k: str(v) for k, v in extra.items()}}
        if caption:
            form["caption"] = caption
        reply = api.call(
            context, "POST", method, what="sending a file", data=form, files={part: (name, data, mime)}
        )
        sent(reply, "sending a file")
    return f"Sent to Telegram chat {target} (message id{'s' if len(ids) > 1 else ''} {', '.join(ids)})."


# -- Discord ------------------------------------------------------------------------------------------------


def _discord(
    context: CallContext, target: str, pieces: list[str], attachment: Any, thread: str | None
) -> str:
    if thread:
        raise ToolError("Discord threads are channels: pass the thread's id as 'target' instead of 'thread'")
    if not target.isdigit():
        raise ToolError("a Discord target is a channel id (a number)")
    api = dapi.discord_service(section(context, dapi.SECTION))
    mentions = {"parse": ["users"]}  # never @everyone, @here or role pings from a model
    path = f"channels/{target}/messages"
    ids: list[str] = []
    last = len(pieces) - 1
    for i, piece in enumerate(pieces or [""]):
        if attachment is not None and i >= max(last, 0):
            name, data, mime = attachment
            payload = {
                "content": piece,
                "allowed_mentions": mentions,
                "attachments": [{"id": 0, "filename": name}],
            }
            reply = api.call(
                context,
                "POST",
                path,
                what="sending a file",
                data={"payload_json": json.dumps(payload)},
                files={"files[0]": (name, data, mime)},
            )
        else:
            reply = api.call(
                context,
                "POST",
                path,
                what="sending a message",
                json={"content": piece, "allowed_mentions": mentions},
            )
        ids.append(str(field(reply, "id", str, "Discord", "sending a message")))
    return f"Sent to Discord channel {target} (message id{'s' if len(ids) > 1 else ''} {', '.join(ids)})."


# -- Slack --------------------------------------------------------------------------------------------------

_SLACK_AUTH_ERRORS = {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"}


def _slack(context: CallContext, target: str, pieces: list[str], attachment: Any, thread: str | None) -> str:
    cfg = section(context, "slack")
    token = require(cfg, "bot_token", 'set [plugins.slack] bot_token = {env = "SLACK_BOT_TOKEN"}')
    api = Service(
        "Slack",
        as_text(cfg, "base_url", "https://slack.com/api") or "https://slack.com/api",
        headers={"Authorization": f"Bearer {token}"},
        secrets=[token],
        auth_hint="Check [plugins.slack] bot_token (a bot token, xoxb-...).",
        timeout=as_float(cfg, "timeout", 30.0, 0.1, 300.0),
        detail=lambda body: str(body.get("error")) if isinstance(body, dict) else None,
    )

    def ok(reply: Any, what: str) -> dict[str, Any]:
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            raise ToolError(f"Slack sent a malformed reply to {what} (no 'ok' field)")
        if not reply["ok"]:
            error = str(reply.get("error") or "unknown_error")
            if error in _SLACK_AUTH_ERRORS:
                raise ToolError(f"Slack rejected the credentials ({error}). {api.auth_hint}", retryable=False)
            hint = " (invite the bot to the channel first)" if error == "not_in_channel" else ""
            raise ToolError(f"Slack refused {what}: {api.scrub(error)}{hint}")
        return reply

    stamps: list[str] = []
    comment = pieces.pop() if attachment is not None and pieces else None
    for piece in pieces:
        body: dict[str, Any] = {"channel": target, "text": piece}
        if thread:
            body["thread_ts"] = thread
        reply = ok(
            api.call(context, "POST", "chat.postMessage", what="sending a message", json=body),
            "sending a message",
        )
        stamps.append(str(reply.get("ts")))
    if attachment is not None:
        stamps.append(_slack_upload(context, api, ok, target, attachment, comment, thread))
    return f"Sent to Slack channel {target} ({len(stamps)} message{'s' if len(stamps) > 1 else ''}: {', '.join(stamps)})."


def _slack_upload(
    context: CallContext,
    api: Service,
    ok: Any,
    channel: str,
    attachment: Any,
    comment: str | None,
    thread: str | None,
) -> str:
    """Slack's three-step upload: reserve an upload URL, post the bytes there, then share the file."""
    name, data, _mime = attachment
    what = "uploading a file"
    reserved = ok(
        api.call(
            context,
            "POST",
            "files.getUploadURLExternal",
            what=what,
            data={"filename": name, "length": str(len(data))},
        ),
        what,
    )
    upload_url = field(reserved, "upload_url", str, "Slack", what)
    file_id = field(reserved, "file_id", str, "Slack", what)
    # the upload URL is pre-signed: the bot token is not sent there
    uploader = Service("Slack", upload_url, secrets=api.secrets, timeout=120.0)
    response: httpx.Response = uploader.send(context, "POST", upload_url, what=what, content=data)
    if response.status_code >= 400:
        api.fail(response, what)
    share: dict[str, Any] = {"files": [{"id": file_id, "title": name}], "channel_id": channel}
    if comment:
        share["initial_comment"] = comment
    if thread:
        share["thread_ts"] = thread
    ok(api.call(context, "POST", "files.completeUploadExternal", what=what, json=share), what)
    return str(file_id)


Sender = Callable[[CallContext, str, list[str], Any, "str | None"], str]
_SENDERS: dict[str, Sender] = {"telegram": _telegram, "discord": _discord, "slack": _slack}


def send_message(
    text: str | None = None,
    platform: str | None = None,
    target: str | None = None,
    file: str | None = None,
    thread: str | None = None,
    *,
    context: CallContext,
) -> str:
    """Send ``text`` (split to the platform's size) and/or ``file`` to ``target`` on ``platform``."""
    ready = configured(context)
    if not ready:
        raise ToolError(f"no messaging platform configured: {ENABLE}", retryable=False)
    if platform is None:
        if len(ready) > 1:
            raise ToolError(
                f"several platforms are configured ({', '.join(ready)}); say which one in 'platform'"
            )
        platform = ready[0]
    if platform not in ready:
        raise ToolError(f"{platform} is not configured (configured: {', '.join(ready)})")
    target = target or as_text(section(context, platform), TARGET_KEYS[platform])
    if not target:
        raise ToolError(f"give a 'target' (no [plugins.{platform}] {TARGET_KEYS[platform]} is configured)")
    pieces = split_text(text, LIMITS[platform]) if text and text.strip() else []
    attachment = _read_attachment(context, file, platform) if file else None
    if not pieces and attachment is None:
        raise ToolError("nothing to send: give 'text', 'file' or both")
    return _SENDERS[platform](context, target, pieces, attachment, thread)


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="send_message",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=send_message,
        check_fn=_check,
        emoji="📨",
        dynamic_schema_overrides=_overrides,
        timeout=300.0,
    )
