"""``discord`` (read and take part: channels, messages, replies, reactions, threads, members) and
``discord_admin`` (server info, roles, pins, deletes, timeouts, kicks, bans, topics) over the Discord REST API.

The ``action`` list the model sees holds only the actions the bot's permissions allow (read from Discord and
cached per system, see ``_discord_api``); the server enforces permissions anyway, and a refusal drops the cache
so the next schema is fresh. Kicks and bans ask a human first unless ``confirm_moderation = false``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

from . import _discord_api as dapi
from ._remote import Service
from ._settings import as_text, section

if TYPE_CHECKING:
    import httpx

    from hermes_core import ToolSystem

TOOLSET = "discord"
_ID = {"type": "string", "pattern": "^[0-9]{1,25}$"}
_VIEW_HISTORY = dapi.VIEW_CHANNEL | dapi.READ_MESSAGE_HISTORY
_PIN = (dapi.MANAGE_MESSAGES, dapi.PIN_MESSAGES)

MAX_DEFINITION = 1000  # characters of a definition as sent (OpenAI format): the hidden actions' note must fit

# action -> (permission alternatives (any one suffices; empty: none needed), required arguments)
Action = tuple[tuple[int, ...], tuple[str, ...]]
READ_ACTIONS: dict[str, Action] = {
    "list_guilds": ((), ()),
    "list_channels": ((dapi.VIEW_CHANNEL,), ("guild_id",)),
    "read_messages": ((_VIEW_HISTORY,), ("channel_id",)),
    "reply": ((dapi.SEND_MESSAGES,), ("channel_id", "message_id", "content")),
    "react": ((dapi.ADD_REACTIONS,), ("channel_id", "message_id", "emoji")),
    "create_thread": ((dapi.CREATE_PUBLIC_THREADS,), ("channel_id", "name")),
    "search_members": ((), ("guild_id", "query")),
}
ADMIN_ACTIONS: dict[str, Action] = {
    "server_info": ((), ("guild_id",)),
    "list_roles": ((), ("guild_id",)),
    "member_info": ((), ("guild_id", "user_id")),
    "add_role": ((dapi.MANAGE_ROLES,), ("guild_id", "user_id", "role_id")),
    "remove_role": ((dapi.MANAGE_ROLES,), ("guild_id", "user_id", "role_id")),
    "pin_message": (_PIN, ("channel_id", "message_id")),
    "unpin_message": (_PIN, ("channel_id", "message_id")),
    "delete_message": ((dapi.MANAGE_MESSAGES,), ("channel_id", "message_id")),
    "timeout_member": ((dapi.MODERATE_MEMBERS,), ("guild_id", "user_id", "minutes")),
    "kick_member": ((dapi.KICK_MEMBERS,), ("guild_id", "user_id")),
    "ban_member": ((dapi.BAN_MEMBERS,), ("guild_id", "user_id")),
    "set_channel_topic": ((dapi.MANAGE_CHANNELS,), ("channel_id", "topic")),
}
_MODERATION = ("kick_member", "ban_member")

_CHANNEL_TYPES: dict[Any, str] = {
    0: "text",
    2: "voice",
    4: "category",
    5: "announcement",
    13: "stage",
    15: "forum",
    16: "media",
}


def _properties(admin: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "guild_id": {**_ID},
        "channel_id": {**_ID},
        "message_id": {**_ID},
    }
    if admin:
        props.update(
            {
                "user_id": {**_ID},
                "role_id": {**_ID},
                "minutes": {"type": "integer", "minimum": 0, "maximum": 40320},
                "topic": {"type": "string", "maxLength": 1024},
                "reason": {"type": "string", "maxLength": 400},
            }
        )
    else:
        props.update(
            {
                # no minLength: an empty required argument is refused by _need, naming what is missing
                "content": {"type": "string", "maxLength": 2000},
                "emoji": {"type": "string", "maxLength": 100, "description": "👍 or name:id"},
                "name": {"type": "string", "maxLength": 100},
                "query": {"type": "string", "maxLength": 100},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Default 20."},
                "before": {**_ID},
            }
        )
    return props


def _grouped(pairs: list[tuple[str, str]], form: str) -> str:
    """``(action, about)`` pairs as ``form`` strings, actions with the same ``about`` next to each other named
    together: ``add_role, remove_role (Manage Roles)``."""
    groups: list[tuple[list[str], str]] = []
    for action, about in pairs:
        if groups and groups[-1][1] == about:
            groups[-1][0].append(action)
        else:
            groups.append(([action], about))
    return "; ".join(form.format(names=", ".join(names), about=about) for names, about in groups)


def _schema(name: str, actions: dict[str, Action], shown: list[str], hidden: list[str]) -> dict[str, Any]:
    """The schema offering the ``shown`` actions. Which arguments an action needs is left to the names (a call
    missing one is told which, see ``_need``). The ``hidden`` ones are named with the permission they need,
    or only the permissions are, or only that some are hidden: the fullest note that fits ``MAX_DEFINITION``."""
    if name == "discord":
        description = "Read and take part in Discord as the bot."
    else:
        description = "Administer Discord servers as the bot: roles, pins, deletes, moderation. minutes=0 lifts a timeout."
    schema = {
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": shown},
                **_properties(name == "discord_admin"),
            },
            "required": ["action"],
            "additionalProperties": False,
        },
    }
    if hidden:
        needs = [(a, dapi.permission_names(actions[a][0][0])) for a in hidden]
        for note in (
            f" Hidden for lack of permission: {_grouped(needs, '{names} ({about})')}.",
            f" Hidden for lack of {', '.join(dict.fromkeys(about for _, about in needs))}.",
            " Some actions are hidden for lack of permission.",
        ):
            longer = {**schema, "description": description + note}
            if len(json.dumps({"type": "function", "function": {"name": name, **longer}})) <= MAX_DEFINITION:
                return longer
    return schema


def _check(system: ToolSystem) -> tuple[bool, str] | Unavailable:
    cfg = section(system, dapi.SECTION)
    if as_text(cfg, "bot_token"):
        return True, ""
    return Unavailable(f"no Discord bot token: {dapi.ENABLE}", by_design=True)  # opt-in: not a problem


class _Family:
    """The action-narrowing schema override of one of the two tools."""

    def __init__(self, name: str, actions: dict[str, Action]) -> None:
        self.name = name
        self.actions = actions

    def overrides(self, available: frozenset[str], system: ToolSystem) -> dict[str, Any] | None:
        if self.name not in available:
            return None
        access = dapi.bot_access(system, section(system, dapi.SECTION))
        shown = [a for a, spec in self.actions.items() if access.allows(spec[0])]
        hidden = [a for a in self.actions if a not in shown]
        return _schema(self.name, self.actions, shown, hidden)


# -- calling Discord ------------------------------------------------------------------------------------------


class _Call:
    """One tool call's Discord session: the service, the context, and the action (for refusal messages)."""

    def __init__(self, context: CallContext, action: str, spec: Action) -> None:
        self.context = context
        self.action = action
        self.spec = spec
        self.cfg = section(context, dapi.SECTION)
        self.api: Service = dapi.discord_service(self.cfg)

    def __call__(self, method: str, path: str, *, reason: str | None = None, **kwargs: Any) -> Any:
        what = f"{self.action.replace('_', ' ')}"
        headers = {"X-Audit-Log-Reason": quote(reason, safe=" ")} if reason else None
        response = self.api.send(self.context, method, path, what=what, headers=headers, **kwargs)
        if response.status_code == 403:
            self._refused(response)
        if response.status_code >= 400:
            self.api.fail(response, what)
        if response.status_code == 204 or not response.content:
            return None
        return self.api.parse(response, what)

    def _refused(self, response: httpx.Response) -> None:
        dapi.forget_access(self.context)
        if self.context.host is not None:
            self.context.host.invalidate_checks()  # the next definitions() re-reads the permissions
        needs = dapi.permission_names(self.spec[0][0]) if self.spec[0] else "access to it"
        raise ToolError(
            f"Discord refused {self.action}: {self.api.detail(response)}. The bot needs {needs} in that server or "
            "channel; a server admin can grant it.",
            retryable=False,
        )


def _need(action: str, spec: Action, args: dict[str, Any]) -> None:
    missing = [a for a in spec[1] if args.get(a) in (None, "")]
    if missing:
        raise ToolError(f"action {action} needs {', '.join(missing)}")


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ToolError(f"Discord sent a malformed reply to {what} (expected a list)")
    return value


def _obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ToolError(f"Discord sent a malformed reply to {what} (expected an object)")
    return value


def _when(stamp: Any) -> str:
    return str(stamp)[:16].replace("T", " ") if stamp else "?"


def _author(message: dict[str, Any]) -> str:
    author: dict[str, Any] = message["author"] if isinstance(message.get("author"), dict) else {}
    return f"{author.get('global_name') or author.get('username') or '?'} ({author.get('id', '?')})"


def _render_messages(messages: list[Any]) -> str:
    lines = []
    for m in reversed(messages):  # Discord gives newest first; read oldest first
        if not isinstance(m, dict):
            continue
        extra = f" [+{len(m['attachments'])} attachment(s)]" if m.get("attachments") else ""
        lines.append(
            f"[{_when(m.get('timestamp'))}] id={m.get('id')} {_author(m)}: {m.get('content', '')}{extra}"
        )
    return "\n".join(lines) or "No messages."


def _discord(action: str, call: _Call, a: dict[str, Any]) -> str:
    if action == "list_guilds":
        guilds = _list(call("GET", "users/@me/guilds", params={"limit": 200}), "listing servers")
        rows = [f"{g.get('id')}  {g.get('name')}" for g in guilds if isinstance(g, dict)]
        return "\n".join(rows) or "The bot is in no server."
    if action == "list_channels":
        channels = _list(call("GET", f"guilds/{a['guild_id']}/channels"), "listing channels")
        ordered = sorted((c for c in channels if isinstance(c, dict)), key=lambda c: c.get("position") or 0)
        listed = [
            f"{c.get('id')}  #{c.get('name')} ({_CHANNEL_TYPES.get(c.get('type'), c.get('type'))})"
            for c in ordered
        ]
        return "\n".join(listed) or "No channels."
    if action == "read_messages":
        params: dict[str, Any] = {"limit": a.get("limit") or 20}
        if a.get("before"):
            params["before"] = a["before"]
        return _render_messages(
            _list(call("GET", f"channels/{a['channel_id']}/messages", params=params), action)
        )
    if action == "reply":
        body = {
            "content": a["content"],
            "message_reference": {"message_id": a["message_id"], "fail_if_not_exists": False},
            "allowed_mentions": {"parse": ["users"], "replied_user": True},
        }
        sent = _obj(call("POST", f"channels/{a['channel_id']}/messages", json=body), action)
        return f"Replied (message id {sent.get('id')})."
    if action == "react":
        emoji = quote(a["emoji"], safe="")
        call("PUT", f"channels/{a['channel_id']}/messages/{a['message_id']}/reactions/{emoji}/@me")
        return f"Reacted with {a['emoji']}."
    if action == "create_thread":
        if a.get("message_id"):
            path = f"channels/{a['channel_id']}/messages/{a['message_id']}/threads"
            thread = call("POST", path, json={"name": a["name"]})
        else:
            thread = call("POST", f"channels/{a['channel_id']}/threads", json={"name": a["name"], "type": 11})
        return f"Created thread {_obj(thread, action).get('id')} ({a['name']})."
    # search_members
    found = _list(
        call(
            "GET",
            f"guilds/{a['guild_id']}/members/search",
            params={"query": a["query"], "limit": a.get("limit") or 20},
        ),
        action,
    )
    rows = []
    for member in found:
        if not isinstance(member, dict):
            continue
        user: dict[str, Any] = member["user"] if isinstance(member.get("user"), dict) else {}
        rows.append(f"{user.get('id')}  {user.get('username')} (nick: {member.get('nick') or '-'})")
    return "\n".join(rows) or f"No member matches {a['query']!r}."


def _admin(action: str, call: _Call, a: dict[str, Any]) -> str:
    g, reason = a.get("guild_id"), a.get("reason")
    if action == "server_info":
        info = _obj(call("GET", f"guilds/{g}", params={"with_counts": "true"}), action)
        return (
            f"{info.get('name')} (id {info.get('id')}): owner {info.get('owner_id')}, "
            f"~{info.get('approximate_member_count', '?')} members, "
            f"~{info.get('approximate_presence_count', '?')} online, {len(info.get('roles') or [])} roles"
        )
    if action == "list_roles":
        roles = _list(call("GET", f"guilds/{g}/roles"), action)
        ordered = sorted((r for r in roles if isinstance(r, dict)), key=lambda r: -(r.get("position") or 0))
        return "\n".join(f"{r.get('id')}  {r.get('name')} (position {r.get('position')})" for r in ordered)
    if action == "member_info":
        m = _obj(call("GET", f"guilds/{g}/members/{a['user_id']}"), action)
        user: dict[str, Any] = m["user"] if isinstance(m.get("user"), dict) else {}
        return (
            f"{user.get('username')} (id {user.get('id')}), nick {m.get('nick') or '-'}, joined "
            f"{_when(m.get('joined_at'))}, roles: {', '.join(m.get('roles') or []) or 'none'}"
            + (
                f", timed out until {m['communication_disabled_until']}"
                if m.get("communication_disabled_until")
                else ""
            )
        )
    if action in ("add_role", "remove_role"):
        method = "PUT" if action == "add_role" else "DELETE"
        call(method, f"guilds/{g}/members/{a['user_id']}/roles/{a['role_id']}", reason=reason)
        return f"{'Gave' if action == 'add_role' else 'Removed'} role {a['role_id']} {'to' if action == 'add_role' else 'from'} {a['user_id']}."
    if action in ("pin_message", "unpin_message"):
        method = "PUT" if action == "pin_message" else "DELETE"
        call(method, f"channels/{a['channel_id']}/pins/{a['message_id']}", reason=reason)
        return f"{'Pinned' if action == 'pin_message' else 'Unpinned'} message {a['message_id']}."
    if action == "delete_message":
        call("DELETE", f"channels/{a['channel_id']}/messages/{a['message_id']}", reason=reason)
        return f"Deleted message {a['message_id']}."
    if action == "timeout_member":
        import datetime

        minutes = int(a["minutes"])
        until = (
            (datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=minutes)).isoformat()
            if minutes
            else None
        )
        call(
            "PATCH",
            f"guilds/{g}/members/{a['user_id']}",
            json={"communication_disabled_until": until},
            reason=reason,
        )
        return (
            f"Timed out {a['user_id']} for {minutes} minutes."
            if minutes
            else f"Lifted the timeout of {a['user_id']}."
        )
    if action == "set_channel_topic":
        call("PATCH", f"channels/{a['channel_id']}", json={"topic": a["topic"]}, reason=reason)
        return f"Set the topic of channel {a['channel_id']}."
    # kick_member / ban_member
    if call.cfg.get("confirm_moderation", True) is not False:
        call.context.request_approval(
            f"discord_admin {action} guild={g} user={a['user_id']}",
            f"{'kicks' if action == 'kick_member' else 'bans'} a member from a Discord server",
        )
    if action == "kick_member":
        call("DELETE", f"guilds/{g}/members/{a['user_id']}", reason=reason)
        return f"Kicked {a['user_id']}."
    call("PUT", f"guilds/{g}/bans/{a['user_id']}", json={}, reason=reason)
    return f"Banned {a['user_id']}."


def _handler(
    name: str, actions: dict[str, Action], run: Callable[[str, _Call, dict[str, Any]], str]
) -> Callable[..., str]:
    def handler(action: str, *, context: CallContext, **args: Any) -> str:
        spec = actions.get(action)
        if spec is None:
            raise ToolError(f"unknown action {action!r}; use one of {', '.join(actions)}")
        call = _Call(context, action, spec)
        if "guild_id" in spec[1] and not args.get("guild_id"):
            args["guild_id"] = as_text(call.cfg, "guild_id")
        _need(action, spec, args)
        return run(action, call, args)

    handler.__name__ = name
    handler.__doc__ = f"The ``{name}`` tool: dispatch one action."
    return handler


discord = _handler("discord", READ_ACTIONS, _discord)
discord_admin = _handler("discord_admin", ADMIN_ACTIONS, _admin)


def register(registry: ToolRegistry) -> None:
    for name, actions, handler, emoji in (
        ("discord", READ_ACTIONS, discord, "💬"),
        ("discord_admin", ADMIN_ACTIONS, discord_admin, "🛡️"),
    ):
        family = _Family(name, actions)
        registry.register(
            name=name,
            toolset=TOOLSET,
            schema={"name": name, **_schema(name, actions, list(actions), [])},
            handler=handler,
            check_fn=_check,
            emoji=emoji,
            dynamic_schema_overrides=family.overrides,
        )
