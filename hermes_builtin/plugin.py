"""The built-ins plugin: registers every built-in tool and the built-in composite toolsets.

Each public module of a family package (``hermes_builtin/tools/<family>/<module>.py``, a name not starting with
``_``) is one unit with its own ``register(registry)``: it is imported and registered on its own, so a module
that fails (a missing dependency, a broken or deleted file) costs only its own tools. The failures are returned
to the plugin manager, which records them on this plugin's record (``failed_units``) for ``hermes plugins
doctor``. Finding the modules lists five folders and imports nothing; each module is imported once. A module
may also be a package (a folder with ``__init__.py``).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
from pathlib import Path
from typing import Any

from hermes_core import ToolRegistry, hookimpl

FAMILIES: tuple[str, ...] = ("execution", "files", "work", "web", "services")
_TOOLS = Path(__file__).resolve().parent / "tools"


def tool_modules() -> list[str]:
    """The tool modules of every family, as ``family.module``: files, not imports (a deleted file is gone)."""
    suffixes = tuple(importlib.machinery.all_suffixes())  # .py, .pyc (sourceless installs), extensions
    found: list[str] = []
    for family in FAMILIES:
        names: set[str] = set()
        try:
            entries = list(os.scandir(_TOOLS / family))
        except OSError:  # a whole family folder deleted: its tools are gone
            continue
        for entry in entries:
            if entry.name.startswith(("_", ".")):
                continue
            if entry.name.endswith(suffixes):
                names.add(entry.name.partition(".")[0])
            elif entry.is_dir() and os.path.exists(os.path.join(entry.path, "__init__.py")):
                names.add(entry.name)  # a tool module grown into a package
        found.extend(f"{family}.{name}" for name in sorted(names))
    return found


def _failure(err: BaseException) -> str:
    if isinstance(err, SyntaxError) and err.lineno:
        return f"SyntaxError: {err.msg} ({err.filename}, line {err.lineno})"
    return f"{type(err).__name__}: {err}"


@hookimpl
def register_tools(registry: ToolRegistry) -> dict[str, str] | None:
    """Register each module's tools; a module that fails is rolled back alone and returned with its reason."""
    failed: dict[str, str] = {}
    for unit in tool_modules():
        module_name = f"hermes_builtin.tools.{unit}"
        before = {entry.name for entry in registry.entries()}
        try:
            module = importlib.import_module(module_name)
            register = getattr(module, "register", None)
            if not callable(register):
                raise TypeError(f"{module_name} defines no register(registry) function")
            register(registry)
        except (Exception, SystemExit) as err:  # one module's failure never takes the other tools down
            for entry in registry.entries():
                if entry.name not in before:
                    registry.deregister(entry.name)
            failed[module_name] = _failure(err)
    return failed or None


@hookimpl
def register_toolsets() -> dict[str, dict[str, Any]]:
    from .toolsets import TOOLSETS

    return TOOLSETS


@hookimpl
def register_commands(cli: Any) -> None:
    from .commands import add_commands

    add_commands(cli)


@hookimpl
def on_agent_message(system: Any, session_id: str, message: dict[str, Any]) -> None:
    from .sessions import record_agent_message

    record_agent_message(system, session_id, message)


@hookimpl
def agent_context(system: Any, tools: frozenset[str]) -> str | None:
    if "memory" not in tools and "skill_view" not in tools:  # asked every turn: most agents need nothing
        return None
    from .agent_context import starting_context

    return starting_context(system, tools)
