"""The built-in composite toolsets. ``CORE`` is the baseline every platform toolset includes."""

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
    "browser_vision",
]

TOOLSETS: dict[str, dict[str, Any]] = {
    "hermes-core": {"description": "The shared baseline of general-purpose tools.", "tools": CORE},
    "hermes-cli": {"description": "The interactive command-line agent.", "includes": ["hermes-core"]},
    "hermes-api": {
        "description": "An agent embedded in another application (adds the shared task board and scheduler).",
        "includes": ["hermes-core", "kanban", "cronjob"],
    },
    "debugging": {"description": "Run, read and fix code.", "includes": ["terminal", "file", "web"]},
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
        ],
    },
    "agents": {
        "description": "Sub-agents and a mixture of models (hidden until a model is configured).",
        "includes": ["delegation", "moa"],
    },
}

# Chat platforms and services (issue 14): each is the shared baseline plus the platform's own tools. Chat platforms
# also get the media tools, whose files the platform can deliver (send_message attaches them).
TOOLSETS.update(
    {
        "hermes-telegram": {
            "description": "An agent answering on Telegram.",
            "includes": ["hermes-core", "messaging", "media"],
        },
        "hermes-discord": {
            "description": "An agent answering on Discord (with the Discord and Discord admin tools).",
            "includes": ["hermes-core", "messaging", "discord", "media"],
        },
        "hermes-slack": {
            "description": "An agent answering on Slack.",
            "includes": ["hermes-core", "messaging", "media"],
        },
        "hermes-feishu": {
            "description": "An agent answering on Feishu/Lark (documents and their comments).",
            "includes": ["hermes-core", "feishu", "media"],
        },
        "hermes-homeassistant": {
            "description": "An agent for a Home Assistant installation.",
            "includes": ["hermes-core", "homeassistant"],
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
