"""Who owns a tool name when two plugins register it: first-party built-ins first, then the config's overrides.

First-party means the ``builtin`` entry point of the ``hermes-tools`` distribution itself (the module it names,
however that module is added: entry point or ``plugins=``). A third-party plugin with an entry point of the
same name is not first-party: the distribution must be ``hermes-tools``.

The rules, applied by the registry's arbiter whenever a plugin registers a name another plugin holds:

- ``[tools] override = {read_file = "myplugin"}`` names the winner of ``read_file``: its registration replaces
  the holder's; a built-in registered later is kept out quietly, any other plugin's registration is a clash
  (even with ``replace=True``). The displaced owner is remembered for ``hermes tools list``.
- Otherwise a first-party name is reserved: another plugin's registration is refused (``ReservedToolName``,
  even with ``replace=True``) and that plugin loses that tool alone (its other tools and hooks stay). When a built-in registers a name a
  third-party plugin took earlier (only possible when a built-in is added late, at run time), the built-in
  takes it and the third-party plugin loses that tool.
- Between third-party plugins the registry's default rules apply (a typed clash error unless ``replace``).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

from .._log import get_logger
from ..registry import ReservedToolName, ToolEntry, ToolNameConflict

if TYPE_CHECKING:
    from ._entrypoints import EntryPointInfo

__all__ = [
    "FIRST_PARTY_DISTRIBUTION",
    "FIRST_PARTY_ENTRY_POINT",
    "Arbiter",
    "announce_once",
    "announcements_muted",
    "first_party_module",
    "is_first_party_entry_point",
    "plugin_matches",
    "source_label",
]

FIRST_PARTY_DISTRIBUTION = "hermes-tools"
FIRST_PARTY_ENTRY_POINT = "builtin"

log = get_logger("hermes.plugins")
_announced: set[tuple[str, str]] = set()
_announce_lock = threading.Lock()
_muted = 0  # > 0 while a command reports what loading found itself (hermes plugins doctor, plugins list)


def is_first_party_entry_point(ep: EntryPointInfo) -> bool:
    """Whether ``ep`` is this distribution's own ``builtin`` entry point."""
    return ep.name == FIRST_PARTY_ENTRY_POINT and ep.distribution == FIRST_PARTY_DISTRIBUTION


@functools.cache
def first_party_module() -> str | None:
    """The module named by the ``builtin`` entry point of the installed hermes-tools (None when not installed).

    Used for plugins added in-process (``plugins=[hermes_builtin.plugin]``); entry-point loading already knows.
    """
    import importlib.metadata

    from ._entrypoints import GROUP

    try:
        dist = importlib.metadata.distribution(FIRST_PARTY_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    for ep in dist.entry_points:
        if ep.group == GROUP and ep.name == FIRST_PARTY_ENTRY_POINT:
            return ep.value.partition(":")[0].strip()
    return None


def plugin_matches(wanted: str, plugin: str | None, distribution: str | None = None) -> bool:
    """Whether the name a user wrote in the config (``myplugin``) designates ``plugin``.

    A plugin is named by its record name (entry point name, ``dropin:<stem>`` or the api name), by the stem of
    a drop-in file, or by its distribution.
    """
    if not plugin:
        return False
    if wanted == plugin or (distribution is not None and wanted == distribution):
        return True
    return plugin.startswith("dropin:") and wanted == plugin[len("dropin:") :]


def source_label(source: str | None, distribution: str | None) -> str:
    """How a plugin or tool's source reads in listings: ``built-in`` for this distribution's own plugin, else
    ``entry point``, ``drop-in``, ``mcp`` or ``api``."""
    if distribution == FIRST_PARTY_DISTRIBUTION:
        return "built-in"
    return source or ""


def announce_once(plugin: str, tool: str, message: str, fix: str) -> None:
    """Say on stderr that ``plugin`` lost ``tool`` and how to fix it, once per process for each plugin and tool
    (loads repeat in one process); printed, not logged, so a host without logging set up still sees it."""
    with _announce_lock:
        if (plugin, tool) in _announced or _muted:
            return
        _announced.add((plugin, tool))
    try:
        print(
            f"hermes: plugin {plugin!r} lost its tool {tool!r}: {message}; fix: {fix}",
            file=sys.stderr,
            flush=True,
        )
    except (OSError, ValueError):  # a closed or broken stderr must not break loading
        pass


@contextlib.contextmanager
def announcements_muted() -> Iterator[None]:
    """Say nothing from ``announce_once`` inside the block (the caller reports every refusal itself)."""
    global _muted
    with _announce_lock:
        _muted += 1
    try:
        yield
    finally:
        with _announce_lock:
            _muted -= 1


class Eviction(NamedTuple):
    """A third-party plugin that lost a name to a built-in registered after it (settled after the hook runs)."""

    plugin: str
    tool: str
    by: str


class Arbiter:
    """The registry's clash arbiter for one plugin host (see the module docstring)."""

    __slots__ = ("distributions", "evictions", "first_party", "overridden", "overrides")

    def __init__(self, overrides: Mapping[str, str] | None = None) -> None:
        self.first_party: set[str] = set()  # record names of first-party plugins
        self.overrides: Mapping[str, str] = overrides or {}  # tool name -> plugin the config names
        self.distributions: dict[str, str] = {}  # record name -> distribution
        self.overridden: dict[str, str] = {}  # tool name -> plugin the override displaced
        self.evictions: list[Eviction] = []

    def _named(self, wanted: str, plugin: str | None) -> bool:
        return plugin_matches(wanted, plugin, self.distributions.get(plugin or ""))

    def __call__(self, existing: ToolEntry, new: ToolEntry, replace: bool) -> str | None:
        name = new.name
        wanted = self.overrides.get(name)
        if wanted is not None:
            if self._named(wanted, new.plugin):
                self.overridden[name] = existing.plugin or "?"
                log.warning(
                    "tool %r of plugin %r replaced by %r ([tools] override)",
                    name,
                    existing.plugin,
                    new.plugin,
                )
                return "replace"
            if self._named(wanted, existing.plugin):
                if new.plugin in self.first_party:  # a built-in added after the plugin chosen to replace it
                    self.overridden[name] = new.plugin or "?"
                    return "keep"
                raise ToolNameConflict(name, existing, new.toolset)  # even with replace=True
        old_first = existing.plugin in self.first_party
        new_first = new.plugin in self.first_party
        if old_first and not new_first:
            raise ReservedToolName(name, existing, new.plugin)
        if new_first and not old_first:
            if existing.plugin is None:  # registered by the host itself, on purpose: the host's tool stays
                log.warning("built-in tool %r not registered: the host registered its own", name)
                return "keep"
            self.evictions.append(Eviction(existing.plugin, name, new.plugin or "?"))
            return "replace"
        return None
