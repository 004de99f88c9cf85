"""Definitions under a budget: past it, tools are deferred behind ``tool_search`` and loaded per session.

Every definition sent costs tokens on every turn, so a selection whose definitions would exceed the budget
(``[tools] search_budget``, 4,000 tokens by default, for everything sent) is split:

- the **core** tools (``[tools] search_core``, the ``hermes-core`` baseline by default) are always sent, as many
  as fit in the budget less the search tool and a quarter kept for loaded tools (the rest of the core becomes
  searchable, and a warning says so);
- ``tool_search`` is sent, and every other tool of the selection is **deferred**: it is not sent, stays callable
  by its exact name through the same pipeline, and is found by searching;
- the tools a session **loaded** (returned by a search, named in ``select:``, or called by exact name) are sent
  in full on its later turns, most recently used first while they fit; the least recently used drop out.

Modes (``[tools] search``, or ``definitions(search=...)``): ``auto`` defers only when the selection does not fit
the budget, ``on`` always defers, ``off`` never does. The Anthropic format renders the provider's own deferral
(``[tools] search_native = true``, the default): the deferred tools go out with ``defer_loading: true`` next to
Anthropic's server-side tool search tool, and only the core and loaded tools count against the budget.

Sizes are estimated from each tool's OpenAI rendering (``estimate_tokens``: never below OpenAI's o200k count on the
benchmark's real definitions).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._log import get_logger

if TYPE_CHECKING:
    from ..config import Config
    from ..registry import ToolEntry
    from ._search_result import SearchResult, ToolMatch
    from .ranking import Ranker, RankerFactory, ToolDoc
    from .selector import Selection, Selector

__all__ = [
    "ANTHROPIC_SEARCH_TOOL",
    "DEFAULT_BUDGET",
    "SEARCH_MODES",
    "SEARCH_TOOL",
    "Deferral",
    "LoadedTools",
    "SearchResult",
    "SearchSettings",
    "ToolMatch",
    "estimate_tokens",
]

log = get_logger("hermes.search")
# the name an in-process plugin without one is given (hermes_core.plugins: "plugin-<id in hex>")
_ANONYMOUS_PLUGIN = re.compile(r"plugin-[0-9a-f]+")

SEARCH_TOOL = "tool_search"
"""The name of the search tool (the built-in registers it); part of every selection, sent only when deferring."""

ANTHROPIC_SEARCH_TOOL: dict[str, Any] = {
    "type": "tool_search_tool_bm25_20251119",
    "name": "tool_search_tool_bm25",
}
"""Anthropic's server-side tool search tool, sent with the ``defer_loading`` definitions."""

SEARCH_MODES = ("auto", "on", "off")
DEFAULT_BUDGET = 4_000
DEFAULT_CORE = ("hermes-core",)
MAX_LOADED = 64  # names a session remembers as loaded (how many are sent is the budget's business)
_SEARCH_TOOL_TOKENS = 250  # room kept for the search tool's definition when sizing the core
_CACHED_STATES = 8


# one match per estimated token: 7 letters, 3 digits, 2 punctuation characters, a run of spaces
_TOKENS = re.compile(r"[A-Za-z]{1,7}|\d{1,3}|[^\sA-Za-z\d]{1,2}|\s{2,}")


def estimate_tokens(definition: Mapping[str, Any]) -> int:
    """Estimated tokens of one rendered definition, from the pieces of its JSON: a run of letters costs one token
    per 7 letters, digits one per 3, punctuation one per 2 characters, a run of spaces one.

    On the 578 real definitions of the benchmark catalog it is never below OpenAI's o200k count (median 15%
    above), where characters / 3.5 falls to half the real count on schemas dense with patterns and numbers.
    """
    return len(_TOKENS.findall(json.dumps(definition, ensure_ascii=False)))


@dataclass(frozen=True, slots=True)
class SearchSettings:
    """The ``[tools] search*`` keys: mode, budget (tokens), core tools/toolsets, native rendering, ranker(s)."""

    mode: str = "auto"
    budget: int = DEFAULT_BUDGET
    core: tuple[str, ...] = DEFAULT_CORE
    native: bool = True
    rankers: tuple[str, ...] = ("bm25",)

    @classmethod
    def from_config(cls, config: Config) -> SearchSettings:
        from ..config import ConfigError

        table = config.data.get("tools") or {}
        where = f"{config.path}: " if config.path else ""
        mode = table.get("search", "auto")
        if mode not in SEARCH_MODES:
            raise ConfigError(f"{where}[tools] search must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
        budget = table.get("search_budget", DEFAULT_BUDGET)
        if budget < 500:
            raise ConfigError(f"{where}[tools] search_budget must be at least 500 tokens, got {budget}")
        ranker = table.get("search_ranker", "bm25")
        rankers = (ranker,) if isinstance(ranker, str) else tuple(ranker)
        if not rankers or not all(isinstance(r, str) and r for r in rankers):
            raise ConfigError(f"{where}[tools] search_ranker must name a ranker or a list of rankers")
        return cls(
            mode=mode,
            budget=int(budget),
            core=tuple(table.get("search_core", DEFAULT_CORE)),
            native=bool(table.get("search_native", True)),
            rankers=rankers,
        )


class LoadedTools:
    """The deferred tools one session loaded, least recently used first, and what the session did to get them.

    ``searches``: ``tool_search`` queries; ``selected``: tools loaded by ``select:``; ``found``: tools loaded by
    a search; ``direct_calls``: deferred tools called by exact name before anything loaded them.
    """

    def __init__(self) -> None:
        self._names: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self.version = 0
        self.searches = 0
        self.found = 0
        self.selected = 0
        self.direct_calls = 0
        self.cache: tuple[Any, list[dict[str, Any]]] | None = None  # (key, definitions) of the last render

    def names(self) -> tuple[str, ...]:
        """Loaded names, least recently used first."""
        return tuple(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def load(self, names: Iterable[str]) -> list[str]:
        """Load (or touch) ``names``; returns the ones that were not loaded before."""
        new = []
        with self._lock:
            for name in names:
                if name in self._names:
                    self._names.move_to_end(name)
                else:
                    self._names[name] = None
                    new.append(name)
            while len(self._names) > MAX_LOADED:
                self._names.popitem(last=False)
            self.version += 1
        return new

    def drop(self, names: Iterable[str]) -> None:
        with self._lock:
            for name in names:
                self._names.pop(name, None)
            self.version += 1

    def stats(self) -> dict[str, Any]:
        return {
            "loaded": list(self._names),
            "searches": self.searches,
            "found": self.found,
            "selected": self.selected,
            "direct_calls": self.direct_calls,
        }


def summary_of(description: str, limit: int = 160) -> str:
    """The first sentence (or line) of a description, at most ``limit`` characters."""
    text = " ".join(description.split())
    for mark in (". ", "! ", "? "):
        cut = text.find(mark)
        if 0 < cut < limit:
            text = text[: cut + 1]
            break
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class _State:
    """The deferral layout of one set of available tools (one registry generation and toolsets version)."""

    __slots__ = (
        "available",
        "core_sent",
        "core_tokens",
        "deferrable",
        "fits",
        "index",
        "index_all",
        "index_lock",
        "key",
        "native",
        "order",
        "rendered",
        "search_schema",
        "search_sent",
        "tokens",
    )

    def __init__(self, key: tuple[Any, ...], available: frozenset[str]) -> None:
        self.key = key
        self.available = available
        self.order: tuple[str, ...] = ()  # available tools in registry order, the search tool left out
        self.tokens: dict[str, int] = {}  # estimated tokens per tool (filled as needed)
        self.fits: bool | None = None  # everything fits the budget (computed lazily, early exit)
        self.core_sent: tuple[str, ...] = ()
        self.core_tokens = 0
        self.deferrable: frozenset[str] = frozenset()
        self.search_schema: dict[str, Any] = {}
        self.search_sent: dict[
            str, tuple[dict[str, Any], int]
        ] = {}  # format -> (search tool rendered, tokens)
        self.rendered: dict[tuple[str, str], dict[str, Any]] = {}  # (format, name) -> definition
        self.native: dict[str, list[dict[str, Any]]] = {}  # format -> defer_loading definitions
        self.index: Ranker | None = None  # over the deferrable tools
        self.index_all: Ranker | None = None  # over every available tool (``hermes tools search``)
        self.index_lock = threading.Lock()


class Deferral:
    """Decides what one turn sends (``definitions``), searches deferred tools and records what sessions load.

    ``selector`` renders schemas; ``rankers()`` returns the ranker factories by name (the built-in ``bm25``
    plus the plugins' ``register_tool_rankers``).
    """

    def __init__(
        self,
        selector: Selector,
        settings: SearchSettings,
        rankers: Callable[[], Mapping[str, RankerFactory]] | None = None,
    ) -> None:
        self.selector = selector
        self.settings = settings
        self._rankers = rankers
        self._states: OrderedDict[tuple[Any, ...], _State] = OrderedDict()
        self._seen: dict[int, tuple[frozenset[str], _State]] = {}
        self._core: tuple[tuple[int, int], tuple[str, ...]] | None = None
        self._lock = threading.Lock()
        self._warned: set[tuple[str, ...]] = set()
        self.active = False  # set once some definitions were deferred: calls are noted from then on

    # -- layout ------------------------------------------------------------------------------------------

    def core_names(self) -> tuple[str, ...]:
        """The configured core as tool names, in priority order: the order of ``[tools] search_core``, a composite
        toolset's own order within it (``hermes-core`` lists its tools most needed first), registration order
        within an atomic toolset. Unknown names are ignored with a warning once."""
        registry, toolsets = self.selector.registry, self.selector.toolsets
        stamp = (registry.generation, toolsets.version)
        if self._core is not None and self._core[0] == stamp:
            return self._core[1]
        from .toolsets import ToolsetError

        composites = toolsets.composites()
        atomic = registry.toolsets()
        ordered: dict[str, None] = {}

        def add(item: str, seen: frozenset[str]) -> None:
            composite = composites.get(item)
            if composite is not None and item not in seen:
                for name in composite.tools:
                    ordered.setdefault(name, None)
                for inner in composite.includes:
                    add(inner, seen | {item})
            elif item in atomic:
                for name in atomic[item]:
                    ordered.setdefault(name, None)
            else:
                for name in sorted(toolsets.resolve([item])):  # "all" or a single tool
                    ordered.setdefault(name, None)

        for item in self.settings.core:
            try:
                toolsets.resolve([item])  # unknown names raise here
            except ToolsetError:
                if ("core", item) not in self._warned:
                    self._warned.add(("core", item))
                    log.warning("[tools] search_core names %r, which is neither a toolset nor a tool", item)
                continue
            add(item, frozenset())
        core = tuple(n for n in ordered if n != SEARCH_TOOL and n in registry)
        self._core = (stamp, core)
        return core

    def state(self, available: frozenset[str]) -> _State:
        """The layout for ``available`` (cached per registry generation, toolsets version and tool set)."""
        registry = self.selector.registry
        stamp = (registry.generation, self.selector.toolsets.version)
        seen = self._seen.get(id(available))
        if seen is not None and seen[0] is available and seen[1].key[:2] == stamp:
            return seen[1]  # this very set was looked up before: no comparison of thousands of names
        key = (*stamp, available)
        found = self._states.get(key)
        if found is not None:
            self._remember(available, found)
            return found
        with self._lock:
            found = self._states.get(key)
            if found is None:
                found = self._layout(key, available)
                self._states[key] = found
                while len(self._states) > _CACHED_STATES:
                    self._states.popitem(last=False)
            self._remember(available, found)
            return found

    def _remember(self, available: frozenset[str], state: _State) -> None:
        if len(self._seen) >= 4 * _CACHED_STATES:
            self._seen.clear()
        self._seen[id(available)] = (available, state)  # the set is held, so its id stays its own

    def _tokens(self, state: _State, entry: ToolEntry) -> int:
        size = state.tokens.get(entry.name)
        if size is None:
            definition = self._render(state, entry, "openai")
            size = state.tokens[entry.name] = estimate_tokens(definition)
        return size

    def _render(self, state: _State, entry: ToolEntry, format: str) -> dict[str, Any]:
        key = (format, entry.name)
        found = state.rendered.get(key)
        if found is None:
            from ..schema import render

            found = state.rendered[key] = render(self.selector.tool_schema(entry, state.available), format)
        return found

    def _layout(self, key: tuple[Any, ...], available: frozenset[str]) -> _State:
        state = _State(key, available)
        registry = self.selector.registry
        entries = [e for e in registry.entries() if e.name in available and e.name != SEARCH_TOOL]
        state.order = tuple(e.name for e in entries)
        budget = self.settings.budget
        core = self.core_names()
        room = budget - _SEARCH_TOOL_TOKENS - budget // 4  # a quarter is kept for the tools sessions load
        sent: list[str] = []
        left_out: list[str] = []
        used = 0
        for name in core:
            entry = registry.get(name)
            if entry is None or name not in available:
                continue
            size = self._tokens(state, entry)
            if used + size <= room:
                sent.append(entry.name)
                used += size
            else:
                left_out.append(entry.name)
        if left_out and tuple(left_out) not in self._warned:
            self._warned.add(tuple(left_out))
            log.info(
                "the core tools %s do not fit [tools] search_budget (%d tokens) and are searchable instead; "
                "raise the budget or name fewer tools in [tools] search_core",
                ", ".join(left_out),
                budget,
            )
        position = {name: number for number, name in enumerate(state.order)}
        sent.sort(key=position.__getitem__)  # sent in registration order, like everything else
        state.core_sent = tuple(sent)
        state.core_tokens = used
        sent_names = set(sent)
        state.deferrable = frozenset(n for n in state.order if n not in sent_names)
        state.search_schema = self._search_schema(state, entries)
        return state

    def _fits(self, state: _State) -> bool:
        """Whether every available tool fits the budget (stops adding up at the first overflow)."""
        if state.fits is None:
            budget = self.settings.budget
            total = 0
            registry = self.selector.registry
            for name in state.order:
                entry = registry.get(name)
                if entry is None:
                    continue
                total += self._tokens(state, entry)
                if total > budget:
                    break
            state.fits = total <= budget
        return state.fits

    def _search_schema(self, state: _State, entries: Sequence[ToolEntry]) -> dict[str, Any]:
        """The search tool's schema for this selection: its registered one, its description naming how many
        tools are deferred and from which toolsets."""
        entry = self.selector.registry.get(SEARCH_TOOL)
        base: dict[str, Any] = (
            dict(entry.schema)
            if entry is not None
            else {"name": SEARCH_TOOL, "description": "", "parameters": {"type": "object", "properties": {}}}
        )
        groups: dict[str, int] = {}
        for e in entries:
            if e.name in state.deferrable:
                groups[e.toolset] = groups.get(e.toolset, 0) + 1
        ranked = sorted(groups.items(), key=lambda item: (-item[1], item[0]))
        shown = ", ".join(f"{name} ({count})" for name, count in ranked[:12])
        more = f" and {len(ranked) - 12} more toolsets" if len(ranked) > 12 else ""
        description = str((entry.description if entry is not None else "") or base.get("description", ""))
        base["description"] = (
            f"{description} {len(state.deferrable)} tools are not shown until found; they come from: "
            f"{shown}{more}."
        ).strip()
        return base

    # -- definitions -------------------------------------------------------------------------------------

    def mode(self, search: str | None) -> str:
        mode = self.settings.mode if search is None else search
        if mode not in SEARCH_MODES:
            raise ValueError(f"search must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
        return mode

    def defers(self, sel: Selection, mode: str) -> bool:
        """Whether this selection is deferred in ``mode`` (``auto``: when it does not fit the budget)."""
        if mode == "off" or SEARCH_TOOL not in sel.runnable:
            return False
        if mode == "on":
            return True
        return not self._fits(self.state(sel.available))

    def definitions(self, sel: Selection, format: str, loaded: LoadedTools | None) -> list[dict[str, Any]]:
        """What one turn sends when the selection is deferred: core, the search tool, the loaded tools (client
        side); for Anthropic with ``native``, also every other tool with ``defer_loading``."""
        self.active = True
        state = self.state(sel.available)
        version = loaded.version if loaded is not None else -1
        key = (state.key, format, version, self.settings.native)
        if loaded is not None and loaded.cache is not None and loaded.cache[0] == key:
            return loaded.cache[1]
        registry = self.selector.registry
        native = format == "anthropic" and self.settings.native
        out = [self._render(state, e, format) for e in map(registry.get, state.core_sent) if e is not None]
        room = self.settings.budget - state.core_tokens
        if native:
            room -= _SEARCH_TOOL_TOKENS
        else:
            found = state.search_sent.get(format)
            if found is None:  # rendered and sized once per layout: every turn sends it
                from ..schema import render

                search = render(state.search_schema, format)
                found = state.search_sent[format] = (search, estimate_tokens(search))
            out.append(found[0])
            room -= found[1]
        sent = self._loaded_that_fit(state, loaded, room)
        out.extend(self._render(state, e, format) for e in map(registry.get, sent) if e is not None)
        if native:
            skip = set(sent)
            deferred = state.native.get(format)
            if deferred is None:
                deferred = state.native[format] = [
                    {**self._render(state, e, format), "defer_loading": True}
                    for e in map(registry.get, state.order)
                    if e is not None and e.name in state.deferrable
                ]
            out.extend(d for d in deferred if d["name"] not in skip)
            out.append(dict(ANTHROPIC_SEARCH_TOOL))
        if loaded is not None:
            loaded.cache = (key, out)
        return out

    def _loaded_that_fit(self, state: _State, loaded: LoadedTools | None, room: int) -> list[str]:
        """The session's loaded tools to send, most recently used first while they fit; in load order."""
        if loaded is None:
            return []
        registry = self.selector.registry
        chosen: list[str] = []
        for name in reversed(loaded.names()):
            entry = registry.get(name)
            if entry is None or name not in state.deferrable:
                continue
            size = self._tokens(state, entry)
            if size <= room:
                chosen.append(name)
                room -= size
        chosen.reverse()
        return chosen

    def sent_tokens(self, definitions: Iterable[Mapping[str, Any]]) -> int:
        """Estimated tokens of what a turn sends into the context (``defer_loading`` definitions excluded)."""
        return sum(estimate_tokens(d) for d in definitions if not d.get("defer_loading"))

    # -- search ------------------------------------------------------------------------------------------

    def ranker(self, state: _State, everything: bool = False) -> Ranker:
        """The ranker over ``state``'s deferrable tools (``everything``: over all its tools), built on first use."""
        found = state.index_all if everything else state.index
        if found is None:
            with state.index_lock:
                found = state.index_all if everything else state.index
                if found is None:
                    names = state.order if everything else [n for n in state.order if n in state.deferrable]
                    found = self._build_ranker(state, names)
                    if everything:
                        state.index_all = found
                    else:
                        state.index = found
        return found

    def _build_ranker(self, state: _State, names: Sequence[str]) -> Ranker:
        from .ranking import BM25Ranker, tool_doc  # at the first search: definitions never rank

        registry = self.selector.registry
        docs: list[ToolDoc] = []
        for name in names:
            entry = registry.get(name)
            if entry is None:
                continue
            schema = self.selector.tool_schema(entry, state.available)
            source = entry.plugin or entry.distribution or ""
            if _ANONYMOUS_PLUGIN.fullmatch(source):  # a label made of an object id: no words to search by
                source = entry.distribution or ""
            docs.append(tool_doc(schema, entry.toolset, source))
        factories = dict(self._rankers()) if self._rankers is not None else {}
        factories.setdefault("bm25", BM25Ranker)
        rankers = []
        for name in self.settings.rankers:
            factory = factories.get(name)
            if factory is None:
                if ("ranker", name) not in self._warned:
                    self._warned.add(("ranker", name))
                    log.warning("[tools] search_ranker names %r, which no plugin provides; using bm25", name)
                factory = BM25Ranker
            try:
                rankers.append(factory(docs))
            except Exception:
                log.exception("ranker %r failed to build; using bm25", name)
                rankers.append(BM25Ranker(docs))
        return rankers[0] if len(rankers) == 1 else _Fused(rankers)

    def search(
        self,
        available: frozenset[str],
        query: str,
        limit: int,
        loaded: LoadedTools | None,
        everything: bool = False,
    ) -> SearchResult:
        """Rank the deferred tools of ``available`` for ``query`` (or load ``select:A,B``) and load the matches
        into ``loaded`` (None: only look). ``everything`` ranks every tool of the selection, core included."""
        state = self.state(available)
        pool = frozenset(state.order) if everything else state.deferrable
        from ._search_result import SearchResult, ToolMatch

        result = SearchResult(query=query, searchable=len(pool))
        text = query.strip()
        started = time.perf_counter()
        if text.lower().startswith("select:"):
            wanted = [n.strip() for n in text[len("select:") :].split(",") if n.strip()]
            names = [n for n in wanted if n in pool]
            result.unknown = [n for n in wanted if n not in pool and n not in state.core_sent]
            scored = [(n, 1.0) for n in names]
        else:
            try:
                scored = self.ranker(state, everything).search(text, limit)
            except Exception:
                log.exception("the tool ranker failed for %r", text)
                scored = []
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        registry = self.selector.registry
        for name, score in scored:
            entry = registry.get(name)
            if entry is None or name not in pool:
                continue
            schema = self.selector.tool_schema(entry, available)
            summary = summary_of(str(schema.get("description", "")))
            result.matches.append(ToolMatch(name, summary, round(float(score), 4), entry.toolset, schema))
        if loaded is not None:
            names = [m.name for m in result.matches]
            # the best match is loaded last: the most recently used, so the last to drop out of the budget
            result.loaded = loaded.load(reversed(names))[::-1] if names else []
            if text.lower().startswith("select:"):
                loaded.selected += len(result.loaded)
            else:
                loaded.searches += 1
                loaded.found += len(result.loaded)
            self.active = True
        return result

    def note_call(self, name: str, available: frozenset[str], loaded: LoadedTools) -> None:
        """A call of ``name`` in a session: a deferred tool called by exact name is loaded (and counted)."""
        state = self.state(available)
        if name not in state.deferrable:
            return
        if name in loaded:
            loaded.load((name,))
            return
        loaded.load((name,))
        loaded.direct_calls += 1
        log.debug("deferred tool %r called by its exact name before any search loaded it", name)

    def forget(self) -> None:
        """Drop every cached layout and index (the ranker plugins or settings changed)."""
        with self._lock:
            self._states.clear()
            self._seen.clear()
            self._core = None


class _Fused:
    """Several rankers' answers fused by reciprocal rank."""

    def __init__(self, rankers: Sequence[Ranker]) -> None:
        self.rankers = list(rankers)

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        from .ranking import fuse

        answers = []
        for ranker in self.rankers:
            try:
                answers.append(ranker.search(query, max(limit * 4, 20)))
            except Exception:
                log.exception("ranker %r failed for %r (left out of the fusion)", ranker, query)
        return fuse(answers, limit)


def __getattr__(name: str) -> object:
    """``SearchResult`` and ``ToolMatch`` on first use (see ``_search_result``)."""
    if name in ("SearchResult", "ToolMatch"):
        from . import _search_result

        return getattr(_search_result, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
