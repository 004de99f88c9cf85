"""What ``tool_search`` returns (``SearchResult`` and its ``ToolMatch`` rows): made on the first search, so
that loading a system and sizing its definitions never pays for creating these two dataclasses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SearchResult", "ToolMatch"]

DEFINITIONS_IN_RESULT = 6_000  # characters of parameter schemas a search result carries at most


@dataclass(slots=True)
class ToolMatch:
    """One tool a search found: its name, a one-line summary, the score, toolset and registered schema."""

    name: str
    summary: str
    score: float
    toolset: str
    schema: dict[str, Any]

    def as_dict(self, definition: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "summary": self.summary}
        if definition:
            out["definition"] = self.schema
        return out


@dataclass(slots=True)
class SearchResult:
    """What ``tool_search`` found: ``matches`` best first, ``loaded`` (newly), ``unknown`` names of a ``select:``,
    ``searchable`` (how many tools the query ran over) and ``elapsed_ms`` (the ranking alone)."""

    query: str
    matches: list[ToolMatch] = field(default_factory=list)
    loaded: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    searchable: int = 0
    elapsed_ms: float = 0.0

    def message(self, definitions: bool = True, max_chars: int = DEFINITIONS_IN_RESULT) -> dict[str, Any]:
        """The result as the model reads it: names and summaries, and the parameters of the best matches as long
        as they fit in ``max_chars`` (every loaded tool is sent in full with the next turn anyway)."""
        tools = []
        room = max_chars if definitions else 0
        for match in self.matches:
            item: dict[str, Any] = {"name": match.name, "summary": match.summary}
            params = match.schema.get("parameters")
            size = len(json.dumps(params, ensure_ascii=False)) if room and params is not None else 0
            if params is not None and 0 < size <= room:
                item["parameters"] = params
                room -= size
            tools.append(item)
        out: dict[str, Any] = {"tools": tools}
        if self.unknown:
            out["unknown"] = self.unknown
        if self.matches:
            out["note"] = "These tools are loaded: call them by name from your next step on."
        else:
            out["note"] = (
                f"No tool matched among {self.searchable} searchable tools; try other words "
                "(what the tool acts on, the service's name) or 'select:NAME' for a tool you know."
            )
        return out
