"""``Selector``: which tools the model may see for one (enabled, disabled, disabled_tools) key, and their definitions.

A selection resolves the toolsets to tool names, runs the checks (``Availability``) and caches the result until
the registry's generation, the toolsets' version or the checks' time-to-live changes; rendered definitions are
kept on the selection, so a repeat ``definitions()`` costs a dict look-up.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._log import get_logger
from ..registry import ToolEntry, ToolRegistry
from .availability import Availability, takes_system
from .deferral import SEARCH_TOOL
from .toolsets import Toolsets

__all__ = ["Names", "Runnable", "Selection", "Selector"]

log = get_logger("hermes")

Names = Sequence[str] | str | None
_DEFAULT_KEY = (None, None, None)
_monotonic = time.monotonic


def names_key(value: Names) -> tuple[str, ...] | None:
    """A selection argument as a hashable tuple (a single name becomes a one-element tuple)."""
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@dataclass(slots=True)
class Selection:
    """The resolved tools of one key: valid for one registry generation, toolsets version and checks epoch, until
    ``expires``. ``pending`` are selected tools whose check was still running when it was resolved (see
    ``Availability``): they keep their previous verdict, or are hidden when they have none."""

    generation: int
    toolsets_version: int
    epoch: int
    expires: float
    available: frozenset[str]
    selected: frozenset[str]
    hidden: dict[str, str]
    pending: frozenset[str] = frozenset()
    rendered: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    deferred: dict[str, bool] = field(
        default_factory=dict
    )  # search mode -> whether this selection is deferred
    runnable: frozenset[str] = frozenset()  # what calls may run: ``available`` plus the search tool
    for_calls: Runnable | None = None


class Runnable:
    """What the call pipeline reads of a selection: the tools a call may run (``available``, with their
    ``entries`` by name), why others are hidden, and the tools whose check was still running (``pending``)."""

    __slots__ = ("available", "entries", "hidden", "pending")

    def __init__(
        self,
        available: frozenset[str],
        hidden: dict[str, str],
        pending: frozenset[str] = frozenset(),
        entries: dict[str, ToolEntry] | None = None,
    ) -> None:
        self.available = available
        self.hidden = hidden
        self.pending = pending
        self.entries = entries if entries is not None else {}


class Selector:
    """Resolves selections over one registry, its toolsets and its checks.

    ``default_enabled``/``default_disabled`` are the host's selection (``ToolSystem.load(enabled=, disabled=)``),
    used when a call passes none; ``config_disabled``/``config_disabled_tools`` come from the configuration.
    ``owner`` is what checks and schema overrides that declare a ``system`` parameter receive.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        toolsets: Toolsets,
        availability: Availability,
        *,
        default_enabled: tuple[str, ...],
        config_disabled: Sequence[str] = (),
        config_disabled_tools: Sequence[str] = (),
        owner: object = None,
    ) -> None:
        self.registry = registry
        self.toolsets = toolsets
        self.availability = availability
        self.default_enabled = default_enabled
        self.default_disabled: tuple[str, ...] | None = None
        self._config_disabled = tuple(config_disabled)
        self._config_disabled_tools = tuple(config_disabled_tools)
        self._owner = owner
        self._selections: dict[tuple[Any, ...], Selection] = {}
        self._selected_of: dict[int, tuple[frozenset[str], frozenset[str]]] = {}
        self._default: Selection | None = None

    def select(
        self, enabled: Names, disabled: Names, disabled_tools: Names, *, wait: bool = True
    ) -> Selection:
        """The current selection for this key (cached; re-resolved when anything it depends on changed).

        ``wait=False`` (the call path) never waits for a running check: such tools are ``pending`` in the
        result. Otherwise the checks without a verdict are waited for, each until its deadline.
        """
        if enabled is None and disabled is None and disabled_tools is None:
            sel = self._default  # the common case, kept out of the dict
            key: tuple[Any, ...] = _DEFAULT_KEY
        else:
            key = (names_key(enabled), names_key(disabled), names_key(disabled_tools))
            sel = self._selections.get(key)
        generation, version, epoch = self.registry.generation, self.toolsets.version, self.availability.epoch
        if (
            sel is not None
            and sel.generation == generation
            and sel.toolsets_version == version
            and sel.epoch == epoch
            and sel.expires > _monotonic()
            and not (wait and sel.pending)
        ):
            return sel
        sel = self._resolve(key, (generation, version, epoch), sel, wait)
        if key is _DEFAULT_KEY:
            self._default = sel
        return sel

    __call__ = select

    def current(self, enabled: Names, disabled: Names, disabled_tools: Names) -> Runnable:
        """What a call with this selection may run, without waiting for any check (``settle`` waits for one)."""
        sel = self._default
        if (  # the common case first: the host's own selection, still valid
            sel is not None
            and enabled is None
            and disabled is None
            and disabled_tools is None
            and sel.generation == self.registry.generation
            and sel.toolsets_version == self.toolsets.version
            and sel.epoch == self.availability.epoch
            and sel.expires > _monotonic()
        ):
            assert sel.for_calls is not None
            return sel.for_calls
        sel = self.select(enabled, disabled, disabled_tools, wait=False)
        assert sel.for_calls is not None
        return sel.for_calls

    select_for_calls = current

    def settle(self, name: str, enabled: Names, disabled: Names, disabled_tools: Names) -> Runnable:
        """What a call may run once tool ``name``'s own running check has answered (or overrun its deadline)."""
        entry = self.registry.get(name)
        if entry is not None:
            self.availability.wait_for(entry)
        return self.current(enabled, disabled, disabled_tools)

    def selected(self, runnable: frozenset[str]) -> frozenset[str]:
        """What a call's context lists as enabled for the selection whose ``runnable`` set this is."""
        found = self._selected_of.get(id(runnable))
        return found[1] if found is not None and found[0] is runnable else runnable

    def _resolve(
        self, key: tuple[Any, ...], stamp: tuple[int, int, int], prior: Selection | None, wait: bool
    ) -> Selection:
        enabled, disabled, disabled_tools = key
        if disabled is None:
            disabled = self.default_disabled if self.default_disabled is not None else self._config_disabled
        if disabled_tools is None:
            disabled_tools = self._config_disabled_tools
        selected = self.toolsets.resolve(
            enabled if enabled is not None else self.default_enabled, disabled, disabled_tools
        )
        entries = [e for e in self.registry.entries() if e.name in selected]
        verdicts, pending = self.availability.assess(entries, wait=wait)
        available = frozenset(n for n, (ok, _) in verdicts.items() if ok)
        hidden = {n: reason for n, (ok, reason) in verdicts.items() if not ok}
        expires = time.monotonic() + self.availability.ttl
        sel = Selection(*stamp, expires, available, selected, hidden, pending)
        runnable = available
        if (
            SEARCH_TOOL not in available
            and SEARCH_TOOL in self.registry
            and self.toolsets.resolve((SEARCH_TOOL,), disabled, disabled_tools)
        ):
            # the search tool may run in every selection (it finds only the selection's own tools and is sent
            # only when some are deferred); disabling it by name or toolset still takes it away
            runnable = available | {SEARCH_TOOL}
        sel.runnable = runnable
        usable = {e.name: e for e in entries if e.name in runnable}
        search = self.registry.get(SEARCH_TOOL) if SEARCH_TOOL in runnable else None
        if search is not None:
            usable[SEARCH_TOOL] = search
        sel.for_calls = Runnable(runnable, hidden, pending, usable)
        # a call's context lists what it selected, not the search tool, and with the tools whose check is still
        # running: one that acts through others (execute_code, delegate_task) must not lose them to a check that
        # had not answered yet (each call it makes is admitted again, waiting for that tool's own check)
        listed = available | pending if pending else available
        if runnable is not listed:
            if len(self._selected_of) > 512:
                self._selected_of.clear()
            self._selected_of[id(runnable)] = (runnable, listed)
        if (
            prior is not None
            and (prior.generation, prior.toolsets_version) == stamp[:2]
            and prior.available == available
        ):
            sel.rendered = prior.rendered  # same tools, same schemas: keep the rendered lists
            sel.deferred = prior.deferred
        if len(self._selections) > 256:
            self._selections.clear()
        self._selections[key] = sel
        return sel

    def invalidate(self) -> None:
        """Forget every cached selection and check verdict: the next look-up re-runs every check."""
        self.availability.invalidate()
        self._selections.clear()
        self._default = None

    def tool_schema(self, entry: ToolEntry, available: frozenset[str]) -> dict[str, Any]:
        """The schema the model sees for ``entry``: the registered schema plus its dynamic overrides."""
        schema = entry.schema
        if entry.description != schema.get("description", ""):
            schema = {**schema, "description": entry.description}
        if entry.dynamic_schema_overrides is not None:
            override = entry.dynamic_schema_overrides
            try:
                extra = (
                    override(available, system=self._owner) if takes_system(override) else override(available)
                )
            except Exception:
                log.exception(
                    "dynamic_schema_overrides of tool %r failed; using the registered schema", entry.name
                )
                extra = None
            if extra:
                schema = {**schema, **extra, "name": entry.name}
        return schema

    def definitions(self, sel: Selection, format: str) -> list[dict[str, Any]]:
        """The rendered definitions of ``sel``'s available tools in ``format``, all of them but the search tool
        (cached on the selection)."""
        rendered = sel.rendered.get(format)
        if rendered is None:
            from ..schema import render  # the provider formats load with the first definitions

            rendered = [
                render(self.tool_schema(e, sel.available), format)
                for e in self.registry.entries()
                if e.name in sel.available and e.name != SEARCH_TOOL
            ]
            sel.rendered[format] = rendered
        return rendered
