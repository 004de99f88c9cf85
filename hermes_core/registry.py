"""``hermes_core.registry``: the registry of the tool system being loaded, as a module.

A drop-in file or a plugin registers tools with::

    from hermes_core import registry

    registry.register(name=..., toolset=..., schema=..., handler=...)

This module *is* that object: ``from hermes_core import registry`` and ``import hermes_core.registry`` give
the same thing. Its functions forward to the registry bound in the current context (each ``ToolSystem``
binds its own while it loads plugins), or to a process-wide default outside any binding. Any other
``ToolRegistry`` attribute (``registry.generation``...) is forwarded too.

The types (``ToolEntry``, ``ToolRegistry``, the errors) are importable from here as well; the
implementation lives in ``hermes_core._registry``. Like it, this module imports nothing else of ours.
"""

from __future__ import annotations

import sys
from typing import Any

from ._registry import (
    InvalidSchemaError,
    Provenance,
    RegistrationError,
    ReservedToolName,
    SchemaCheck,
    ToolAlreadyRegistered,
    ToolEntry,
    ToolNameConflict,
    ToolRegistry,
    bound_registry,
    current_provenance,
    current_registry,
    provenance,
)

__all__ = [
    "InvalidSchemaError",
    "Provenance",
    "RegistrationError",
    "ReservedToolName",
    "SchemaCheck",
    "ToolAlreadyRegistered",
    "ToolEntry",
    "ToolNameConflict",
    "ToolRegistry",
    "add",
    "bound_registry",
    "current_provenance",
    "current_registry",
    "deregister",
    "deregister_toolset",
    "entries",
    "get",
    "names",
    "provenance",
    "register",
    "toolsets",
]


def register(*args: Any, replace: bool = False, **fields: Any) -> ToolEntry:
    """``ToolRegistry.register`` on the registry of the system being loaded (``ToolEntry``'s fields)."""
    return current_registry().register(*args, replace=replace, **fields)


def add(entry: ToolEntry, *, replace: bool = False) -> ToolEntry:
    return current_registry().add(entry, replace=replace)


def deregister(name: str) -> ToolEntry | None:
    return current_registry().deregister(name)


def deregister_toolset(toolset: str) -> list[ToolEntry]:
    return current_registry().deregister_toolset(toolset)


def get(name: str) -> ToolEntry | None:
    return current_registry().get(name)


def entries() -> tuple[ToolEntry, ...]:
    return current_registry().entries()


def names() -> list[str]:
    return current_registry().names()


def toolsets() -> dict[str, list[str]]:
    return current_registry().toolsets()


def __getattr__(attr: str) -> Any:
    if attr == "registry":  # ``from hermes_core.registry import registry`` (the old spelling): this module
        return sys.modules[__name__]
    if attr.startswith("__"):
        raise AttributeError(attr)
    return getattr(current_registry(), attr)
