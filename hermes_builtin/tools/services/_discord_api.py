"""The Discord REST API as the ``discord``, ``discord_admin`` and ``send_message`` tools use it, and what the bot
may do: its permissions, read from ``GET /users/@me/guilds`` and cached per system in the stash.

Configuration (``[plugins.discord]``)::

    bot_token = { env = "DISCORD_BOT_TOKEN" }
    guild_id = "123456789012345678"          # optional: the server the tools act in by default
    default_channel_id = "..."               # optional: send_message's default target
    confirm_moderation = true                # kick_member / ban_member need a human's approval
    base_url = "https://discord.com/api/v10"
    timeout = 20                             # seconds per request
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ._remote import Owner, Service
from ._settings import as_float, as_text, require

__all__ = [
    "ACCESS_KEY",
    "ALL_PERMISSIONS",
    "ENABLE",
    "SECTION",
    "BotAccess",
    "bot_access",
    "discord_service",
    "forget_access",
    "permission_names",
]

SECTION = "discord"
ENABLE = 'set [plugins.discord] bot_token = {env = "DISCORD_BOT_TOKEN"} in the hermes config'
DEFAULT_BASE = "https://discord.com/api/v10"
ACCESS_KEY = "discord.access"
ACCESS_TTL = 300.0  # permissions are re-read after this long (and after Discord refuses an action)
FAILED_TTL = 30.0  # a failed read is retried sooner
MAX_GUILD_PAGES = 5  # 200 guilds a page

# Permission bits (https://discord.com/developers/docs/topics/permissions)
KICK_MEMBERS = 1 << 1
BAN_MEMBERS = 1 << 2
ADMINISTRATOR = 1 << 3
MANAGE_CHANNELS = 1 << 4
ADD_REACTIONS = 1 << 6
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
MANAGE_MESSAGES = 1 << 13
READ_MESSAGE_HISTORY = 1 << 16
MANAGE_ROLES = 1 << 28
CREATE_PUBLIC_THREADS = 1 << 35
MODERATE_MEMBERS = 1 << 40
PIN_MESSAGES = 1 << 51
ALL_PERMISSIONS = (1 << 53) - 1

_NAMES = {
    KICK_MEMBERS: "Kick Members",
    BAN_MEMBERS: "Ban Members",
    MANAGE_CHANNELS: "Manage Channels",
    ADD_REACTIONS: "Add Reactions",
    VIEW_CHANNEL: "View Channels",
    SEND_MESSAGES: "Send Messages",
    MANAGE_MESSAGES: "Manage Messages",
    READ_MESSAGE_HISTORY: "Read Message History",
    MANAGE_ROLES: "Manage Roles",
    CREATE_PUBLIC_THREADS: "Create Public Threads",
    MODERATE_MEMBERS: "Timeout Members",
    PIN_MESSAGES: "Pin Messages",
}


def permission_names(mask: int) -> str:
    return ", ".join(name for bit, name in _NAMES.items() if mask & bit) or "none"


def _detail(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    message = body.get("message")
    code = body.get("code")
    if message and code:
        return f"{message} (code {code})"
    return str(message) if message else None


def discord_service(cfg: dict[str, Any], timeout: float | None = None) -> Service:
    token = require(cfg, "bot_token", ENABLE)
    return Service(
        "Discord",
        as_text(cfg, "base_url", DEFAULT_BASE) or DEFAULT_BASE,
        headers={
            "Authorization": f"Bot {token}",
            "User-Agent": "DiscordBot (https://pypi.org/project/hermes-tools/, 0.1)",
        },
        secrets=[token],
        auth_hint="Check [plugins.discord] bot_token (the bot token from the Developer Portal, not a user token).",
        timeout=timeout if timeout is not None else as_float(cfg, "timeout", 20.0, 1.0, 300.0),
        detail=_detail,
    )


class BotAccess:
    """What the bot may do: the union of its server-level permissions over the servers in scope."""

    __slots__ = ("error", "expires", "guilds", "permissions")

    def __init__(
        self,
        permissions: int | None = None,
        guilds: list[tuple[str, str, int]] | None = None,
        error: str = "",
        expires: float = 0.0,
    ) -> None:
        self.permissions = permissions  # None: unknown (the read failed); every action stays visible
        self.guilds = guilds or []  # (id, name, permissions)
        self.error = error
        self.expires = expires

    def allows(self, alternatives: tuple[int, ...]) -> bool:
        """True when unknown, or when one of the alternative permission masks is fully granted."""
        if self.permissions is None or not alternatives:
            return True
        return any(mask & self.permissions == mask for mask in alternatives)


class _AccessBox:
    """The stash value: the current ``BotAccess`` and a lock so one system reads it once at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.access: BotAccess | None = None


def _read_access(owner: Owner, cfg: dict[str, Any]) -> BotAccess:
    from hermes_core import ToolError

    only = as_text(cfg, "guild_id")
    try:
        api = discord_service(cfg, timeout=5.0)
        guilds: list[tuple[str, str, int]] = []
        after = "0"
        for _ in range(MAX_GUILD_PAGES):
            page = api.call(  # no waiting out a 429 here: this runs while the tool definitions are built
                owner,
                "GET",
                "users/@me/guilds",
                what="reading the bot's servers",
                params={"limit": 200, "after": after},
                retry=False,
            )
            if not isinstance(page, list):
                raise ToolError("Discord sent a malformed reply to reading the bot's servers (not a list)")
            for guild in page:
                if not isinstance(guild, dict) or not isinstance(guild.get("id"), str):
                    continue
                try:
                    perms = int(guild.get("permissions", "0"))
                except (TypeError, ValueError):
                    perms = 0
                if guild.get("owner") is True or perms & ADMINISTRATOR:
                    perms = ALL_PERMISSIONS
                guilds.append((guild["id"], str(guild.get("name", "")), perms))
            if len(page) < 200:
                break
            after = guilds[-1][0]
    except ToolError as err:
        return BotAccess(error=err.message, expires=time.monotonic() + FAILED_TTL)
    if only is not None:
        guilds = [g for g in guilds if g[0] == only]
    union = 0
    for _, _, perms in guilds:
        union |= perms
    return BotAccess(permissions=union, guilds=guilds, expires=time.monotonic() + ACCESS_TTL)


def bot_access(owner: Owner, cfg: dict[str, Any]) -> BotAccess:
    """The bot's permissions, from the stash while fresh, else read from Discord (5 s timeout)."""
    box = owner.stash(ACCESS_KEY, _AccessBox, lambda _box: None)
    with box.lock:
        if box.access is None or box.access.expires <= time.monotonic():
            box.access = _read_access(owner, cfg)
        return box.access


def forget_access(owner: Owner) -> None:
    """Drop the cached permissions (after Discord refused an action), so the next read is fresh."""
    box = owner.stash(ACCESS_KEY, _AccessBox, lambda _box: None)
    with box.lock:
        box.access = None
