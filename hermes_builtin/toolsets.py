"""The built-in composite toolsets, shaped like the seed's: ``hermes-core`` is the shared baseline, ``hermes-cli``
the full interactive set, and the platform sets build on the baseline.

Composites name tools rather than including the built-ins' atomic toolsets: a built-in module that fails to
load then costs only its own tools (the doctor lists the names nobody registered), never every composite.
"""

from __future__ import annotations

from typing import Any

# The general-purpose tools every platform gets: edit this one list to change them all.
CORE: list[str] = [
    "terminal",
    "process",
    "read_file",
    "write_file",
    "patch",
    "search_files",
    "todo",
    "memory",
    "session_search",
    "clarify",
    "execute_code",
    "skills_list",
    "skill_view",
    "skill_manage",
    "delegate_task",
    "web_search",  # hidden until a search backend is configured
    "web_extract",
    "vision_analyze",  # hidden until a vision model is configured
]

BROWSER_TOOLS: list[str] = [
    "browser_navigate",
    "browser_snapshot",
    "browser_click",
    "browser_type",
    "browser_scroll",
    "browser_back",
    "browser_press",
    "browser_get_images",
    "browser_console",
    "browser_dialog",
    "browser_vision",
    "browser_cdp",
]
MEDIA_TOOLS: list[str] = ["image_generate", "video_generate", "text_to_speech"]
HOMEASSISTANT_TOOLS: list[str] = ["ha_list_entities", "ha_get_state", "ha_list_services", "ha_call_service"]
KANBAN_TOOLS: list[str] = [
    "kanban_create",
    "kanban_list",
    "kanban_show",
    "kanban_claim",
    "kanban_heartbeat",
    "kanban_complete",
    "kanban_block",
    "kanban_unblock",
    "kanban_comment",
    "kanban_attach",
    "kanban_link",
    "kanban_update",
]
DISCORD_TOOLS: list[str] = ["discord", "discord_admin"]
FEISHU_TOOLS: list[str] = [
    "feishu_doc_read",
    "feishu_drive_list_comments",
    "feishu_drive_list_comment_replies",
    "feishu_drive_reply_comment",
    "feishu_drive_add_comment",
]

# What a terminal session adds to the baseline: everything but the platforms' own tools (the Discord and Feishu
# tools act on the conversation of their platform). Tools whose service is not configured stay hidden.
INTERACTIVE: list[str] = [
    *BROWSER_TOOLS,
    "video_analyze",  # hidden until a vision model is configured
    *KANBAN_TOOLS,
    "cronjob",
    *MEDIA_TOOLS,
    *HOMEASSISTANT_TOOLS,
    "mixture_of_agents",
    "send_message",
]

# An agent behind an HTTP API: the interactive set without what needs a person at a terminal or in a chat
# (clarify, send_message); generated files reach the caller as attachments, so the media tools stay.
API_SERVER: list[str] = [t for t in [*CORE, *INTERACTIVE] if t not in ("clarify", "send_message")]

TOOLSETS: dict[str, dict[str, Any]] = {
    "hermes-core": {"description": "The shared baseline of general-purpose tools.", "tools": CORE},
    "hermes-cli": {
        "description": "The full interactive set: the baseline plus browser, media, scheduler, task board, Home "
        "Assistant, several models and messages out.",
        "includes": ["hermes-core"],
        "tools": INTERACTIVE,
    },
    "hermes-api-server": {
        "description": "An agent behind an HTTP API: the interactive set without clarify and send_message.",
        "tools": API_SERVER,
    },
    "hermes-api": {"description": "Former name of hermes-api-server.", "includes": ["hermes-api-server"]},
    "debugging": {
        "description": "Run, read and fix code.",
        "tools": [
            *("terminal", "process", "read_file", "write_file", "patch", "search_files"),
            *("web_search", "web_extract"),
        ],
    },
    "browser": {
        "description": "Drive a headless browser, and search the web.",
        "tools": [*BROWSER_TOOLS, "web_search"],
    },
    "safe": {
        "description": "Nothing that runs commands or writes files.",
        "tools": [
            "read_file",
            "search_files",
            "todo",
            "memory",
            "session_search",
            "clarify",
            "skills_list",
            "skill_view",
            "kanban_list",
            "kanban_show",
        ],
    },
    "agents": {
        "description": "Sub-agents and a mixture of models (hidden until a model is configured).",
        "tools": ["delegate_task", "mixture_of_agents"],
    },
}

# Chat platforms and services (issue 14): each is the shared baseline plus the platform's own tools. Chat platforms
# also get the media tools, whose files the platform can deliver (send_message attaches them).
TOOLSETS.update(
    {
        "hermes-telegram": {
            "description": "An agent answering on Telegram.",
            "includes": ["hermes-core"],
            "tools": ["send_message", *MEDIA_TOOLS],
        },
        "hermes-discord": {
            "description": "An agent answering on Discord (with the Discord and Discord admin tools).",
            "includes": ["hermes-core"],
            "tools": ["send_message", *DISCORD_TOOLS, *MEDIA_TOOLS],
        },
        "hermes-slack": {
            "description": "An agent answering on Slack.",
            "includes": ["hermes-core"],
            "tools": ["send_message", *MEDIA_TOOLS],
        },
        "hermes-feishu": {
            "description": "An agent answering on Feishu/Lark (documents and their comments).",
            "includes": ["hermes-core"],
            "tools": [*FEISHU_TOOLS, *MEDIA_TOOLS],
        },
        "hermes-homeassistant": {
            "description": "An agent for a Home Assistant installation.",
            "includes": ["hermes-core"],
            "tools": HOMEASSISTANT_TOOLS,
        },
        # Webhook payloads are untrusted: a prompt injection in one must not be able to run commands, write
        # files, send messages, spend on paid APIs, act on devices, or read private data (files, memory, past
        # sessions, documents, home state) that the reply would carry back to whoever sent the hook. What stays
        # only plans and reads the bundled skills.
        "hermes-webhook": {
            "description": "A safe subset for untrusted input (webhooks): no commands, writes, messages or reads.",
            "tools": ["todo", "clarify", "skills_list", "skill_view"],
        },
    }
)
