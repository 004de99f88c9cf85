"""Which tools the model may see: toolsets (atomic and composite), check verdicts and the per-key selection.

- ``toolsets``: the toolset algebra (``Toolsets``, ``ALL``, ``ToolsetError``).
- ``availability``: ``requires_env`` and ``check_fn`` verdicts (``Availability``, ``Unavailable``).
- ``selector``: resolves a selection and renders its definitions (``Selector``).
- ``deferral``: definitions under a budget, the rest behind ``tool_search`` (``Deferral``, ``SearchSettings``,
  ``LoadedTools``, ``SearchResult``).
- ``ranking``: the tool ranker seam and the built-in lexical ranker (``Ranker``, ``ToolDoc``, ``BM25Ranker``).
"""

from typing import TYPE_CHECKING

from .availability import Availability, Unavailable, takes_system
from .deferral import (
    SEARCH_TOOL,
    Deferral,
    LoadedTools,
    SearchSettings,
    estimate_tokens,
)
from .selector import Names, Selection, Selector, names_key
from .toolsets import ALL, CompositeToolset, ToolsetError, Toolsets, UnknownToolsetError

if TYPE_CHECKING:
    from ._search_result import SearchResult, ToolMatch
    from .ranking import BM25Ranker, Ranker, RankerFactory, ToolDoc

__all__ = [
    "ALL",
    "SEARCH_TOOL",
    "Availability",
    "BM25Ranker",
    "CompositeToolset",
    "Deferral",
    "LoadedTools",
    "Names",
    "Ranker",
    "RankerFactory",
    "SearchResult",
    "SearchSettings",
    "Selection",
    "Selector",
    "ToolDoc",
    "ToolMatch",
    "ToolsetError",
    "Toolsets",
    "Unavailable",
    "UnknownToolsetError",
    "estimate_tokens",
    "names_key",
    "takes_system",
]

_RANKING = ("BM25Ranker", "Ranker", "RankerFactory", "ToolDoc")


def __getattr__(name: str) -> object:
    """The ranking and search-result names on first use: only a search needs them, and definitions should not
    pay for their import."""
    if name in _RANKING:
        from . import ranking

        return getattr(ranking, name)
    if name in ("SearchResult", "ToolMatch"):
        from . import _search_result

        return getattr(_search_result, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
