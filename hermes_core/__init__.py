"""hermes-tools: find tools, decide which ones the model may see, and run every call through one pipeline.

The public names live here; everything else in ``hermes_core`` is an implementation detail unless
its module documents otherwise (``hermes_core.schema``, ``hermes_core.security``, ``hermes_core.testing``,
``hermes_core.sandbox``, ``hermes_core.environments``, ``hermes_core.agent``, ``hermes_core.models``,
``hermes_core.selection``: the tool-search names for ranker plugins, ``hermes_core.scheduler``: scheduled jobs,
and ``hermes_core.stores``: the shared SQL stores).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from . import registry
from ._registry import (
    InvalidSchemaError,
    Provenance,
    RegistrationError,
    ReservedToolName,
    ToolAlreadyRegistered,
    ToolEntry,
    ToolNameConflict,
    ToolRegistry,
)
from .context import ApprovalDenied, CallContext
from .decisions import Attachment, Block, CallOutcome, RequireApproval, Rewrite, ToolOutput, Unavailable
from .errors import ToolError, tool_error, tool_result
from .hookspecs import hookimpl
from .host import Host
from .session import Session

if TYPE_CHECKING:
    from .system import ToolSystem

__version__ = "0.1.0"

# A library logs; the host application decides where the records go.
logging.getLogger("hermes").addHandler(logging.NullHandler())

__all__ = [
    "ApprovalDenied",
    "Attachment",
    "Block",
    "CallContext",
    "CallOutcome",
    "Host",
    "InvalidSchemaError",
    "Provenance",
    "RegistrationError",
    "RequireApproval",
    "ReservedToolName",
    "Rewrite",
    "Session",
    "ToolAlreadyRegistered",
    "ToolEntry",
    "ToolError",
    "ToolNameConflict",
    "ToolOutput",
    "ToolRegistry",
    "ToolSystem",
    "Unavailable",
    "__version__",
    "hookimpl",
    "registry",
    "tool_error",
    "tool_result",
]


def __getattr__(name: str) -> Any:
    if name == "ToolSystem":
        from .system import ToolSystem

        return ToolSystem
    raise AttributeError(f"module 'hermes_core' has no attribute {name!r}")
