"""Toolset algebra: atomic toolsets (a tool's ``toolset``), composites that name tools and include others.

``all`` means every registered tool. A composite's includes are checked when it is defined: an unknown
include or a cycle is an error then, never an empty list later. Tool names a composite lists but nobody
registered are kept (a tool may come later, e.g. from an MCP server) and reported by ``problems()``.
Enabling an unknown toolset is an error; disabling one is only a warning (``disabled = ["homeassistant"]``
for a plugin that is not installed changes nothing, so it must not break every command).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._log import get_logger
from ..registry import ToolRegistry

__all__ = ["ALL", "CompositeToolset", "ToolsetError", "Toolsets", "UnknownToolsetError"]

ALL = "all"

log = get_logger("hermes.toolsets")


class ToolsetError(ValueError):
    """A composite toolset definition is invalid (unknown include, cycle, wrong shape)."""


class UnknownToolsetError(ToolsetError):
    """A name passed as enabled/disabled is neither a toolset nor a tool."""


@dataclass(frozen=True, slots=True)
class CompositeToolset:
    name: str
    tools: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()
    description: str = ""
    plugin: str | None = None


def _names(value: Any, what: str, toolset: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not all(isinstance(v, str) for v in value)
    ):
        raise ToolsetError(f"toolset {toolset!r}: {what} must be a list of names")
    return tuple(value)


class Toolsets:
    """The composite definitions of one tool system, resolved against its registry."""

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        self._composites: dict[str, CompositeToolset] = {}
        self._lock = threading.Lock()
        self.version = 0  # bumped on every definition, so resolution caches can key on it
        self._warned: set[str] = set()

    # -- definition --------------------------------------------------------------------------------------

    def define(
        self, name: str, spec: Mapping[str, Any] | CompositeToolset, plugin: str | None = None
    ) -> CompositeToolset:
        """Define (or redefine) a composite toolset from ``{"tools", "includes", "description"}``."""
        if not isinstance(name, str) or not name or name == ALL:
            raise ToolsetError(f"invalid toolset name {name!r}")
        if isinstance(spec, CompositeToolset):
            comp = spec
        else:
            if not isinstance(spec, Mapping):
                raise ToolsetError(
                    f"toolset {name!r}: definition must be a table/dict, got {type(spec).__name__}"
                )
            unknown = set(spec) - {"tools", "includes", "description"}
            if unknown:
                raise ToolsetError(f"toolset {name!r}: unknown keys {sorted(unknown)}")
            comp = CompositeToolset(
                name=name,
                tools=_names(spec.get("tools"), "tools", name),
                includes=_names(spec.get("includes"), "includes", name),
                description=str(spec.get("description", "")),
                plugin=plugin,
            )
        with self._lock:
            atomic: Mapping[str, Any] | None = (
                None  # the registry's toolsets, listed only when an include needs them
            )
            for inc in comp.includes:
                if inc in (ALL, name) or inc in self._composites:
                    continue
                if atomic is None:
                    atomic = self._registry.toolsets()
                if inc not in atomic and not inc.startswith("mcp-"):  # MCP toolsets may not be connected yet
                    raise ToolsetError(
                        f"toolset {name!r} includes unknown toolset {inc!r}{self._suggest(inc, atomic)}"
                    )
            previous = self._composites.get(name)
            self._composites[name] = comp
            cycle = self._find_cycle(name)
            if cycle:
                if previous is None:
                    del self._composites[name]
                else:
                    self._composites[name] = previous
                raise ToolsetError(f"toolset {name!r} forms an include cycle: {' -> '.join(cycle)}")
            self.version += 1
        return comp

    def define_many(self, specs: Mapping[str, Any], plugin: str | None = None) -> None:
        """Define several composites that may include each other, in any order."""
        pending = dict(specs)
        while pending:
            progressed = False
            for name, spec in list(pending.items()):
                includes = spec.get("includes", ()) if isinstance(spec, Mapping) else ()
                waiting = [i for i in includes or () if isinstance(i, str) and i in pending and i != name]
                if waiting:
                    continue
                self.define(name, spec, plugin)
                del pending[name]
                progressed = True
            if not progressed:  # what remains includes itself in a loop
                name = next(iter(pending))
                raise ToolsetError(f"toolset {name!r} forms an include cycle among {sorted(pending)}")

    def _find_cycle(self, start: str) -> list[str] | None:
        path: list[str] = []

        def visit(name: str) -> list[str] | None:
            if name in path:
                return [*path[path.index(name) :], name]
            comp = self._composites.get(name)
            if comp is None:
                return None
            path.append(name)
            for inc in comp.includes:
                found = visit(inc)
                if found:
                    return found
            path.pop()
            return None

        return visit(start)

    def _suggest(self, name: str, atomic: Mapping[str, Any]) -> str:
        import difflib

        close = difflib.get_close_matches(name, [*atomic, *self._composites], n=3)
        return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""

    # -- queries -----------------------------------------------------------------------------------------

    def remove_plugin(self, plugin: str) -> None:
        """Forget the composites a plugin defined (when it is unregistered)."""
        with self._lock:
            for name in [n for n, c in self._composites.items() if c.plugin == plugin]:
                del self._composites[name]
            self.version += 1

    def composites(self) -> dict[str, CompositeToolset]:
        return dict(self._composites)

    def names(self) -> list[str]:
        return sorted({*self._registry.toolsets(), *self._composites})

    def expand(self, name: str) -> set[str]:
        """The tool names a toolset (or ``all``, or a single tool name) stands for."""
        return self._expand(name, self._registry.toolsets(), set())

    def _expand(
        self, name: str, atomic: Mapping[str, list[str]], seen: set[str], top: bool = True
    ) -> set[str]:
        if name == ALL:
            return set(self._registry.names())
        if name in seen:
            return set()
        seen.add(name)
        out: set[str] = set(atomic.get(name, ()))
        comp = self._composites.get(name)
        if comp is not None:
            out.update(comp.tools)
            for inc in comp.includes:
                out |= self._expand(inc, atomic, seen, top=False)
        elif name not in atomic:
            if name in self._registry:
                out.add(name)
            elif top and not name.startswith("mcp-"):  # an include whose tools have all gone is just empty
                raise UnknownToolsetError(f"unknown toolset or tool {name!r}{self._suggest(name, atomic)}")
        return out

    def resolve(
        self,
        enabled: Iterable[str],
        disabled: Iterable[str] = (),
        disabled_tools: Iterable[str] = (),
    ) -> frozenset[str]:
        """Expand enabled toolsets, then remove disabled toolsets and tools (checks are applied elsewhere)."""
        atomic = self._registry.toolsets()
        names: set[str] = set()
        for ts in enabled:
            names |= self._expand(ts, atomic, set())
        for ts in disabled:
            if not self._known(ts, atomic):
                if ts not in self._warned:
                    self._warned.add(ts)
                    log.warning(
                        "disabled toolset or tool %r does not exist (ignored)%s",
                        ts,
                        self._suggest(ts, atomic),
                    )
                continue
            names -= self._expand(ts, atomic, set())
        names.difference_update(disabled_tools)
        return frozenset(n for n in names if n in self._registry)

    def _known(self, name: str, atomic: Mapping[str, Any]) -> bool:
        return (
            name == ALL
            or name in atomic
            or name in self._composites
            or name in self._registry
            or name.startswith("mcp-")
        )

    def unknown(self, names: Iterable[str]) -> list[str]:
        """The ones of ``names`` that are neither a toolset nor a tool (with a suggestion when one is close)."""
        atomic = self._registry.toolsets()
        return [f"{n!r}{self._suggest(n, atomic)}" for n in names if not self._known(n, atomic)]

    def problems(self) -> list[str]:
        """Composite members that name no registered tool (reported by the doctor)."""
        out = []
        for comp in self._composites.values():
            missing = [t for t in comp.tools if t not in self._registry]
            if missing:
                out.append(f"toolset {comp.name!r} lists unregistered tools: {', '.join(missing)}")
        return out
