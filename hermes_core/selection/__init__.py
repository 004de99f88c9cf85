"""Which tools the model may see: toolsets (atomic and composite), check verdicts and the per-key selection.

- ``toolsets``: the toolset algebra (``Toolsets``, ``ALL``, ``ToolsetError``).
- ``availability``: ``requires_env`` and ``check_fn`` verdicts (``Availability``, ``Unavailable``).
- ``selector``: resolves a selection and renders its definitions (``Selector``).
"""

from .availability import Availability, Unavailable, takes_system
from .selector import Names, Selection, Selector, names_key
from .toolsets import ALL, CompositeToolset, ToolsetError, Toolsets, UnknownToolsetError

__all__ = [
    "ALL",
    "Availability",
    "CompositeToolset",
    "Names",
    "Selection",
    "Selector",
    "ToolsetError",
    "Toolsets",
    "Unavailable",
    "UnknownToolsetError",
    "names_key",
    "takes_system",
]
