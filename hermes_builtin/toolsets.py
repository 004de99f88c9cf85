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
}
