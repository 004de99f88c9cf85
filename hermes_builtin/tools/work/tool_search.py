"""``tool_search``: find the tools that are not shown (deferred past the definitions budget) and load them.

The host sends it only when some tools are deferred (see ``hermes_core.selection.deferral``). A query ranks the
deferred tools of the caller's selection; ``select:NAME,NAME`` loads named tools directly. What it returns is
loaded into the caller's session: sent in full from the next turn on, and callable.
"""

from __future__ import annotations

import json
from typing import Any

from hermes_core import CallContext, ToolError, ToolRegistry
from hermes_core.selection import SEARCH_TOOL

TOOLSET = "tool_search"
MAX_LIMIT = 20
MAX_QUERY = 500

SCHEMA: dict[str, Any] = {
    "name": SEARCH_TOOL,
    "description": (
        "Find tools that are not shown yet. Describe what you need to do in a few words (the action, what it acts "
        "on, the service); the best matches are loaded and you can call them from your next step on. "
        "'select:NAME,NAME' loads tools you know by name."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 5},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}


def tool_search(query: str, limit: int = 5, *, context: CallContext) -> str:
    """Rank the deferred tools of this call's selection and load the matches into its session."""
    if context.host is None:
        raise ToolError("tool_search needs a tool system to search", retryable=False)
    if not query.strip():
        raise ToolError("'query' is empty: say what the tool should do, or 'select:NAME'")
    result = context.host.search_tools(
        query, limit=limit, session_id=context.session_id, available=context.enabled
    )
    return json.dumps(result.message(), ensure_ascii=False)


def register(registry: ToolRegistry) -> None:
    registry.register(
        name=SEARCH_TOOL,
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=tool_search,
        emoji="🔎",
        parallel_safe=True,
        annotations={"readOnlyHint": True, "openWorldHint": False},
    )
