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
]

TOOLSETS: dict[str, dict[str, Any]] = {
    "hermes-core": {"description": "The shared baseline of general-purpose tools.", "tools": CORE},
    "hermes-cli": {"description": "The interactive command-line agent.", "includes": ["hermes-core"]},
    "hermes-api": {
        "description": "An agent embedded in another application (adds the shared task board and scheduler).",
        "includes": ["hermes-core", "kanban", "cronjob"],
    },
    "debugging": {"description": "Run, read and fix code.", "includes": ["terminal", "file"]},
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
