"""What a plugin's failure costs the calls: its policy hooks are gone, so calls are refused or run without them.

A plugin that fails (it does not import, pluggy refuses its hooks, its ``register_tools`` raises...) is
unregistered whole, its hooks with it. When those hooks include ``pre_tool_call`` (a policy: a blocklist, a
rate limit, an approval rule), running calls on as if nothing happened would run them unguarded. The config's
``[plugins] on_failure`` decides, per plugin or for all:

- ``"refuse"`` (the default for a plugin that declares ``pre_tool_call``): every call is blocked with the
  reason until the plugin loads again; a stand-in ``pre_tool_call`` (``Refusal``) does the blocking;
- ``"continue"`` (the default for any other plugin): calls run without the plugin.

Either way ``hermes plugins doctor`` reports a lost policy hook as an error. Which hooks a failed plugin
declares is read from the plugin object when there is one, else from its source (``declared_hooks``): a plugin
that fails to import never shows its hooks any other way.
"""

from __future__ import annotations

import ast
import functools
import importlib.machinery
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..decisions import Block
from ..hookspecs import PROJECT, hookimpl
from ._precedence import plugin_matches

if TYPE_CHECKING:
    from ._manager import PluginRecord

__all__ = ["POLICY_HOOKS", "Refusal", "declared_hooks", "failure_mode", "unmarked_hooks"]

POLICY_HOOKS = frozenset({"pre_tool_call"})
"""Hooks whose absence changes what may run: losing one is an error, and by default refuses every call."""

_MAX_FILES = 200  # a package scanned for its hooks: enough for any plugin, bounded for a broken path


def failure_mode(record: PluginRecord, choices: Mapping[str, str]) -> str:
    """``"refuse"`` or ``"continue"`` for a failed plugin: its own entry in ``[plugins] on_failure``, else the
    plain value, else ``"refuse"`` when it declares a policy hook."""
    for wanted, mode in choices.items():
        if wanted != "*" and plugin_matches(wanted, record.name, record.distribution):
            return mode
    if "*" in choices:
        return choices["*"]
    return "refuse" if POLICY_HOOKS & set(record.hooks) else "continue"


class Refusal:
    """Stands in for a failed plugin whose ``on_failure`` is ``"refuse"`` (registered under its name): blocks
    every call, saying why."""

    MESSAGE = (
        "the plugin failed to load, so its policy cannot check this call: tool calls are refused until it is "
        "fixed (`hermes plugins doctor` says how)"
    )

    @hookimpl(tryfirst=True)
    def pre_tool_call(self) -> Block:
        return Block(self.MESSAGE)


def declared_hooks(record: PluginRecord, plugin: object = None) -> list[str]:
    """The hooks ``record``'s plugin declares: from the plugin object when it was imported, else from its
    source (a drop-in file, or the package of an entry point), without importing anything."""
    if record.hooks:
        return list(record.hooks)
    if plugin is not None:
        marker = f"{PROJECT}_impl"
        return sorted(n for n in dir(plugin) if hasattr(getattr(plugin, n, None), marker))
    found: set[str] = set()
    for path in _sources(record):
        try:
            found |= _hook_names(path.read_text("utf-8", errors="replace"))
        except OSError:
            continue
    return sorted(found)


def _sources(record: PluginRecord) -> Iterator[Path]:
    if record.source == "drop-in" and record.path:
        yield Path(record.path)
        return
    if record.source != "entry point" or not record.module:
        return
    top = record.module.partition(":")[0].strip().split(".")[0]
    try:
        spec = importlib.machinery.PathFinder.find_spec(top)  # finds it without importing anything
    except (ImportError, ValueError):
        return
    if spec is None or not spec.origin or not spec.has_location:
        return
    origin = Path(spec.origin)
    if origin.name != "__init__.py":
        yield origin
        return
    count = 0
    for folder, dirs, files in os.walk(origin.parent):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__pycache__", "tests"))]
        for name in sorted(files):
            if name.endswith(".py"):
                count += 1
                if count > _MAX_FILES:
                    return
                yield Path(folder) / name


def _hook_names(source: str) -> set[str]:
    """Names of the hook specs that functions of ``source`` are named after (decorated or not: a plugin that
    does not import cannot show its markers); any text mention when the source does not parse."""
    from .. import hookspecs

    known = {n for n in vars(hookspecs) if hasattr(getattr(hookspecs, n), f"{PROJECT}_spec")}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {n for n in known if f"def {n}" in source}
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in known
    }


@functools.cache
def _hooks() -> tuple[str, ...]:
    """The hooks hermes declares (asked once per drop-in file: worked out once)."""
    from .. import hookspecs

    return tuple(n for n in dir(hookspecs) if hasattr(getattr(hookspecs, n), f"{PROJECT}_spec"))


def unmarked_hooks(plugin: Any) -> list[str]:
    """Functions of ``plugin`` named after a hook but missing ``@hookimpl``: pluggy never calls them."""
    marker = f"{PROJECT}_impl"
    out = []
    # a module's own names answer at once; a class or an instance may inherit them, so each is asked
    names = [n for n in _hooks() if n in vars(plugin)] if isinstance(plugin, ModuleType) else _hooks()
    for name in names:
        value = getattr(plugin, name, None)
        if callable(value) and not hasattr(value, marker):
            module = getattr(value, "__module__", None)
            if module == getattr(plugin, "__name__", module):  # defined by the plugin, not imported into it
                out.append(name)
    return out
