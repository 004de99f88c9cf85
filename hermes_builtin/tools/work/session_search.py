"""``session_search``: full-text search over past sessions recorded by the host (``hermes_builtin.sessions``)."""

from __future__ import annotations

import time
from typing import Any

from hermes_core import CallContext, ToolError, ToolRegistry

TOOLSET = "session_search"

SCHEMA: dict[str, Any] = {
    "name": "session_search",
    "description": (
        "Search the messages of past sessions (full text, best matches first). All words must match; "
        'use "a phrase" for exact phrases, word* for prefixes, OR between alternatives. '
        "Each hit shows the session id, time (UTC), role and a snippet with matches in [brackets]."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 500},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Default 10."},
            "session_id": {"type": "string", "description": "Only search this session."},
            "role": {
                "type": "string",
                "maxLength": 32,
                "description": "Only messages of this role (user, assistant...).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}


def _check() -> bool:
    from hermes_builtin._fts5 import fts5_available

    return fts5_available()


def session_search(
    query: str,
    limit: int = 10,
    session_id: str | None = None,
    role: str | None = None,
    *,
    context: CallContext,
) -> str:
    """Search recorded sessions and render the hits."""
    from hermes_builtin.sessions import QueryError, SessionStore

    with SessionStore(context.data_dir) as store:
        try:
            hits = store.search(query, limit, session_id=session_id, role=role)
        except QueryError as exc:
            raise ToolError(f"{exc}; give one or more words to look for") from None
    if not hits:
        return f"No past messages match {query!r}."
    lines = [f"{len(hits)} match(es) for {query!r}:"]
    for hit in hits:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(hit.timestamp))
        snippet = " ".join(hit.snippet.split())
        lines.append(f"- session {hit.session_id} · {when} · {hit.role}: {snippet}")
    return "\n".join(lines)


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="session_search",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=session_search,
        check_fn=_check,
        emoji="🔎",
        max_result_size_chars=20_000,
        parallel_safe=True,
    )
