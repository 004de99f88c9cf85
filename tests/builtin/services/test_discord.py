"""``discord`` and ``discord_admin`` against a local server speaking the Discord REST API: the action list follows
the bot's permissions (read from ``GET /users/@me/guilds``, cached per system, dropped after a refusal)."""

from __future__ import annotations

import datetime
import itertools
import json
from collections.abc import Callable
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from hermes_builtin.tools.services import discord_tools
from hermes_core import ToolSystem
from hermes_core.security import CallbackApprover

Configure = Callable[..., ToolSystem]
TOKEN = "discord-bot-token.FAKE.for-tests-314159"
GUILD = "111111111111111111"
CHANNEL = "222222222222222222"
MESSAGE = "333333333333333333"
USER = "444444444444444444"
ROLE = "555555555555555555"

VIEW, SEND, HISTORY = 1 << 10, 1 << 11, 1 << 16
REACT, THREADS = 1 << 6, 1 << 35
MANAGE_MESSAGES, BAN, ROLES, ADMIN = 1 << 13, 1 << 2, 1 << 28, 1 << 3


class Guilds:
    """``GET /users/@me/guilds`` with permissions a test can change; counts how often it is read."""

    def __init__(self, permissions: int, *, owner: bool = False) -> None:
        self.permissions = permissions
        self.owner = owner
        self.reads = 0

    def __call__(self, request: Request) -> Response:
        assert request.headers["Authorization"] == f"Bot {TOKEN}"
        self.reads += 1
        guild = {
            "id": GUILD,
            "name": "Test Server",
            "owner": self.owner,
            "permissions": str(self.permissions),
        }
        return Response(json.dumps([guild]), content_type="application/json")


def _system(configure: Configure, base: str, secret: Callable[[str], Any], **extra: Any) -> ToolSystem:
    return configure(discord={"bot_token": secret(TOKEN), "base_url": base, "guild_id": GUILD, **extra}, **{})


def _actions(system: ToolSystem, tool: str) -> list[str]:
    (entry,) = [d for d in system.definitions(search="off") if d["function"]["name"] == tool]
    return list(entry["function"]["parameters"]["properties"]["action"]["enum"])


def test_actions_follow_the_bots_permissions_and_are_cached(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    guilds = Guilds(VIEW | SEND | HISTORY)
    httpserver.expect_request("/users/@me/guilds").respond_with_handler(guilds)
    system = _system(configure, base, secret)
    assert _actions(system, "discord") == [
        "list_guilds",
        "list_channels",
        "read_messages",
        "reply",
        "search_members",
    ]
    assert _actions(system, "discord_admin") == ["server_info", "list_roles", "member_info"]
    (admin,) = [d for d in system.definitions(search="off") if d["function"]["name"] == "discord_admin"]
    assert (
        "Manage Roles, Manage Messages, Timeout Members, Kick Members, Ban Members"
        in admin["function"]["description"]
    )
    assert len(json.dumps(admin)) <= 1000
    system.invalidate_checks()
    system.definitions()
    assert guilds.reads == 1  # one read per system while fresh, shared by both tools

    wider = _system(configure, base, secret)
    guilds.permissions = VIEW | SEND | HISTORY | REACT | THREADS | MANAGE_MESSAGES | BAN
    assert "react" in _actions(wider, "discord") and "create_thread" in _actions(wider, "discord")
    assert {"pin_message", "delete_message", "ban_member"} <= set(_actions(wider, "discord_admin"))
    assert "add_role" not in _actions(wider, "discord_admin")


def test_administrator_or_owner_sees_everything(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/users/@me/guilds").respond_with_handler(Guilds(ADMIN))
    assert "kick_member" in _actions(_system(configure, base, secret), "discord_admin")
    httpserver.clear()
    httpserver.expect_request("/users/@me/guilds").respond_with_handler(Guilds(0, owner=True))
    assert len(_actions(_system(configure, base, secret), "discord_admin")) == 12


def test_a_refusal_drops_the_cached_permissions(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    guilds = Guilds(VIEW | MANAGE_MESSAGES)
    httpserver.expect_request("/users/@me/guilds").respond_with_handler(guilds)
    httpserver.expect_request(f"/channels/{CHANNEL}/messages/{MESSAGE}", method="DELETE").respond_with_json(
        {"message": "Missing Permissions", "code": 50013}, status=403
    )
    system = _system(configure, base, secret)
    assert "delete_message" in _actions(system, "discord_admin")
    guilds.permissions = VIEW  # an admin took the permission away
    outcome = system.call_outcome(
        "discord_admin", {"action": "delete_message", "channel_id": CHANNEL, "message_id": MESSAGE}
    )
    assert outcome.status == "error" and "Missing Permissions (code 50013)" in outcome.result
    assert "needs Manage Messages" in outcome.result
    assert "delete_message" not in _actions(system, "discord_admin")
    assert guilds.reads == 2


def test_guild_list_is_paged(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    first = [{"id": str(10**17 + i), "name": f"g{i}", "permissions": str(VIEW)} for i in range(200)]
    second = [{"id": GUILD, "name": "last", "permissions": str(VIEW | REACT)}]

    def page(request: Request) -> Response:
        body = second if request.args["after"] != "0" else first
        assert request.args["limit"] == "200"
        return Response(json.dumps(body), content_type="application/json")

    httpserver.expect_request("/users/@me/guilds").respond_with_handler(page)
    system = configure(
        discord={"bot_token": secret(TOKEN), "base_url": base}
    )  # no guild_id: all servers count
    assert "react" in _actions(system, "discord")
    afters = [r.args["after"] for r, _ in httpserver.log]
    assert afters == ["0", first[-1]["id"]]


def test_read_reply_react_and_thread(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/users/@me/guilds").respond_with_handler(Guilds(ADMIN))
    messages = [
        {
            "id": "9",
            "content": "newest",
            "timestamp": "2026-01-02T10:00:00+00:00",
            "author": {"id": "1", "username": "ann"},
        },
        {
            "id": "8",
            "content": "older",
            "timestamp": "2026-01-02T09:00:00+00:00",
            "author": {"id": "2", "username": "bob", "global_name": "Bob"},
            "attachments": [{"id": "a"}],
        },
    ]
    httpserver.expect_request(
        f"/channels/{CHANNEL}/messages", method="GET", query_string={"limit": "5", "before": MESSAGE}
    ).respond_with_json(messages)
    httpserver.expect_request(f"/channels/{CHANNEL}/messages", method="POST").respond_with_json({"id": "10"})
    httpserver.expect_request(
        f"/channels/{CHANNEL}/messages/{MESSAGE}/reactions/👍/@me", method="PUT"
    ).respond_with_data("", status=204)
    httpserver.expect_request(
        f"/channels/{CHANNEL}/messages/{MESSAGE}/threads", method="POST", json={"name": "follow-up"}
    ).respond_with_json({"id": "777", "type": 11})
    system = _system(configure, base, secret)
    read = system.call(
        "discord", {"action": "read_messages", "channel_id": CHANNEL, "limit": 5, "before": MESSAGE}
    )
    assert read.splitlines() == [
        "[2026-01-02 09:00] id=8 Bob (2): older [+1 attachment(s)]",
        "[2026-01-02 10:00] id=9 ann (1): newest",
    ]
    reply = system.call(
        "discord", {"action": "reply", "channel_id": CHANNEL, "message_id": MESSAGE, "content": "on it"}
    )
    assert reply == "Replied (message id 10)."
    sent = json.loads(next(r for r, _ in httpserver.log if r.method == "POST").get_data())
    assert sent["message_reference"]["message_id"] == MESSAGE and sent["allowed_mentions"]["parse"] == [
        "users"
    ]
    react = system.call(
        "discord", {"action": "react", "channel_id": CHANNEL, "message_id": MESSAGE, "emoji": "👍"}
    )
    assert react == "Reacted with 👍."
    put = next(r for r, _ in httpserver.log if r.method == "PUT")
    assert (
        "/reactions/%F0%9F%91%8D/@me" in put.environ["REQUEST_URI"]
    )  # the emoji goes URL-encoded, as documented
    thread = system.call(
        "discord",
        {"action": "create_thread", "channel_id": CHANNEL, "message_id": MESSAGE, "name": "follow-up"},
    )
    assert thread == "Created thread 777 (follow-up)."


def test_admin_actions_send_audit_reasons_and_moderation_asks_first(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/users/@me/guilds").respond_with_handler(Guilds(ADMIN))
    httpserver.expect_request(f"/guilds/{GUILD}/members/{USER}/roles/{ROLE}", method="PUT").respond_with_data(
        "", status=204
    )
    httpserver.expect_request(f"/guilds/{GUILD}/members/{USER}", method="PATCH").respond_with_json(
        {"user": {}}
    )
    httpserver.expect_request(f"/guilds/{GUILD}/bans/{USER}", method="PUT").respond_with_data("", status=204)
    asked: list[str] = []

    def approve(request: Any) -> str:
        asked.append(request.subject)
        return "once"

    system = _system(configure, base, secret)
    added = system.call(
        "discord_admin", {"action": "add_role", "user_id": USER, "role_id": ROLE, "reason": "helper röle"}
    )
    assert added == f"Gave role {ROLE} to {USER}."
    put = next(r for r, _ in httpserver.log if r.path.endswith(ROLE))
    assert put.headers["X-Audit-Log-Reason"] == "helper r%C3%B6le"
    timed = system.call("discord_admin", {"action": "timeout_member", "user_id": USER, "minutes": 10})
    assert timed == f"Timed out {USER} for 10 minutes."
    until = json.loads(next(r for r, _ in httpserver.log if r.method == "PATCH").get_data())[
        "communication_disabled_until"
    ]
    left = datetime.datetime.fromisoformat(until) - datetime.datetime.now(datetime.UTC)
    assert datetime.timedelta(minutes=9) < left <= datetime.timedelta(minutes=10)

    headless = system.call_outcome("discord_admin", {"action": "ban_member", "user_id": USER})
    assert headless.status == "denied" and not any(r.path.endswith(f"bans/{USER}") for r, _ in httpserver.log)
    approving = configure(
        discord={"bot_token": secret(TOKEN), "base_url": base, "guild_id": GUILD},
        approver=CallbackApprover(approve),
    )
    assert approving.call("discord_admin", {"action": "ban_member", "user_id": USER}) == f"Banned {USER}."
    assert asked == [f"discord_admin ban_member guild={GUILD} user={USER}"]


def test_errors(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/users/@me/guilds").respond_with_handler(Guilds(ADMIN))
    system = _system(configure, base, secret)
    missing = system.call_outcome("discord", {"action": "reply", "channel_id": CHANNEL})
    assert "action reply needs message_id, content" in missing.result
    httpserver.expect_oneshot_request(f"/guilds/{GUILD}/channels").respond_with_json({"not": "a list"})
    malformed = system.call_outcome("discord", {"action": "list_channels"})
    assert "malformed reply to listing channels" in malformed.result
    httpserver.expect_oneshot_request(f"/guilds/{GUILD}/channels").respond_with_json(
        {"message": "You are being rate limited.", "retry_after": 0.2, "global": False},
        status=429,
        headers={"Retry-After": "1"},
    )
    httpserver.expect_oneshot_request(f"/guilds/{GUILD}/channels").respond_with_json(
        [
            {"id": "2", "name": "general", "type": 0, "position": 1},
            {"id": "1", "name": "Info", "type": 4, "position": 0},
        ]
    )
    listed = system.call("discord", {"action": "list_channels"})
    assert listed.splitlines() == ["1  #Info (category)", "2  #general (text)"]
    httpserver.expect_oneshot_request(f"/guilds/{GUILD}/roles").respond_with_json(
        {"message": f"401: Unauthorized {TOKEN}", "code": 0}, status=401
    )
    denied = system.call_outcome("discord_admin", {"action": "list_roles"})
    assert (
        "Discord rejected the credentials" in denied.result and "[plugins.discord] bot_token" in denied.result
    )
    assert TOKEN not in denied.result


def test_hidden_without_a_token(configure: Configure) -> None:
    system = configure()
    for tool in ("discord", "discord_admin"):
        ok, reason = system.availability_of(tool)
        assert not ok and '[plugins.discord] bot_token = {env = "DISCORD_BOT_TOKEN"}' in reason


def test_unknown_permissions_keep_every_action_visible(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/users/@me/guilds").respond_with_json(
        {"message": "You are being rate limited.", "retry_after": 3.0, "global": False}, status=429
    )
    system = _system(configure, base, secret)
    assert len(_actions(system, "discord_admin")) == 12  # Discord enforces permissions itself
    assert len(httpserver.log) == 1  # and building the definitions did not wait out the rate limit


def test_every_permission_set_keeps_the_definitions_under_1000_characters() -> None:
    """Whatever the bot may do, the narrowed schema and its note on the hidden actions fit in 1,000 characters."""
    for name, actions in (
        ("discord", discord_tools.READ_ACTIONS),
        ("discord_admin", discord_tools.ADMIN_ACTIONS),
    ):
        gated = [a for a, spec in actions.items() if spec[0]]
        for picks in itertools.product((False, True), repeat=len(gated)):
            hidden = [a for a, hide in zip(gated, picks, strict=True) if hide]
            shown = [a for a in actions if a not in hidden]
            schema = discord_tools._schema(name, actions, shown, hidden)
            sent = json.dumps({"type": "function", "function": {"name": name, **schema}})
            assert len(sent) <= 1000, (name, hidden, len(sent))
            assert not hidden or "Hidden" in schema["description"]
