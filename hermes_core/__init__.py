"""hermes-tools: find tools, decide which ones the model may see, and run every call through one pipeline.

The public modules (a plugin or a host application may import the names of their ``__all__``; every other
module of ``hermes_core`` is an implementation detail, and ``tests/test_layering.py`` reads this list):

- ``hermes_core``: the registry, ``ToolSystem``, ``hookimpl``, the call context, ``Host`` and ``Session``,
  the hook decisions and the result helpers (below)
- ``hermes_core.registry``: the registry of the tool system being loaded, as a module
- ``hermes_core.schema``: argument parsing, coercion, validation and the provider formats
- ``hermes_core.security``: the command and path guards, approvals and the redactor
- ``hermes_core.fileio``: atomic writes and file access that never follows a planted link
- ``hermes_core.safehttp``: HTTP clients held to a network policy (the SSRF guard)
- ``hermes_core.sandbox``: the execution layer's walls, which every tool that runs code goes through
- ``hermes_core.environments``: where a session's commands and files live (local, and plugin kinds)
- ``hermes_core.content``: a call's result as provider content parts
- ``hermes_core.selection``: the tool-search names (``SEARCH_TOOL``, ``ToolDoc``, ``Ranker``) ranker plugins use
- ``hermes_core.scheduler``: the scheduled jobs the cronjob tool makes
- ``hermes_core.stores``: the SQL layer the scheduler and the kanban board share
- ``hermes_core.doctor``: the plugin doctor (``run_doctor(system)``), as ``hermes plugins doctor`` runs it
- ``hermes_core.testing``: the pytest plugin for plugin authors
- ``hermes_core.cli``: the ``hermes`` command, for plugin commands (``current_system()``)
- ``hermes_core.agent``: the agent loop hosts embed
- ``hermes_core.models``: the chat model clients
- ``hermes_core.cancellation``: stopping calls that are already running (``CancelToken``, ``cancel_scope``)
"""

from __future__ import annotations

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
