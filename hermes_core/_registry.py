"""The tool registry: ``ToolEntry``, ``ToolRegistry`` and the context binding behind ``hermes_core.registry``.

A leaf module: it imports nothing of ours. Everything else in hermes_core builds on it.

Each ``ToolSystem`` owns one ``ToolRegistry``. The module ``hermes_core.registry`` that self-registering
drop-in files call forwards to whichever registry is bound in the current context (a context
variable, see ``bound_registry``), so several systems in one process never share tools. Outside any
binding it forwards to a process-wide default registry.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from ._log import get_logger

__all__ = [
    "FIELDS",
    "InvalidSchemaError",
    "Provenance",
    "RegistrationError",
    "ReservedToolName",
    "SchemaCheck",
    "ToolAlreadyRegistered",
    "ToolEntry",
    "ToolNameConflict",
    "ToolRegistry",
    "bound_registry",
    "current_provenance",
    "current_registry",
    "provenance",
]

log = get_logger("hermes.registry")

SchemaCheck = Callable[[str, Mapping[str, Any]], None]
"""``check(name, schema)`` raises ``InvalidSchemaError`` to refuse a schema (``hermes_core.schema.SchemaChecker``)."""
Arbiter = Callable[["ToolEntry", "ToolEntry", bool], "str | None"]
"""``arbiter(existing, new, replace)`` decides a clash between two plugins: "replace", "keep" or None (the
default rules); it raises a ``RegistrationError`` to refuse the new entry."""
RefusalHandler = Callable[["ToolEntry", "RegistrationError"], bool]
"""``on_refusal(entry, error)`` is told of a refused registration (a name clash, a schema the checker refused);
True means it took note of it and the registration ends quietly (``register`` returns the entry, unregistered),
False that the error is raised."""


class RegistrationError(ValueError):
    """A registration was refused; the registry and its generation are unchanged."""


class ToolNameConflict(RegistrationError):
    """The name is already taken by a tool of another toolset."""

    def __init__(self, name: str, existing: ToolEntry, toolset: str) -> None:
        self.name = name
        self.existing = existing
        self.toolset = toolset
        super().__init__(
            f"tool {name!r} from toolset {toolset!r} clashes with the tool of the same name from toolset "
            f"{existing.toolset!r} (registered by {existing.plugin or 'unknown plugin'}); rename one of them, or "
            "replace it on purpose: replace=True in code, or [tools] override in the config"
        )


class ToolAlreadyRegistered(RegistrationError):
    """The same toolset registered the name twice without ``replace=True``."""

    def __init__(self, name: str, toolset: str) -> None:
        self.name = name
        self.toolset = toolset
        super().__init__(
            f"tool {name!r} is already registered in toolset {toolset!r}; pass replace=True to replace it"
        )


class ReservedToolName(ToolNameConflict):
    """The name belongs to a first-party built-in tool; another plugin may take it only through the config's
    ``[tools] override`` table."""

    def __init__(self, name: str, existing: ToolEntry, plugin: str | None) -> None:
        self.name = name
        self.existing = existing
        self.toolset = existing.toolset
        self.plugin = plugin
        owner = existing.plugin or "the built-in plugin"
        short = plugin[len("dropin:") :] if plugin and plugin.startswith("dropin:") else plugin
        RegistrationError.__init__(
            self,
            f"tool {name!r} clashes with the built-in tool of the same name (plugin {owner!r}); plugin "
            f"{plugin or 'unknown'!r} may not replace it. Rename the plugin's tool, or replace the built-in on "
            f'purpose with [tools] override = {{{name} = "{short or "PLUGIN"}"}} in the config',
        )


class InvalidSchemaError(RegistrationError):
    """The tool's schema is not a valid tool schema (JSON Schema for its parameters)."""


@dataclass(frozen=True, slots=True)
class Provenance:
    """Who registered a tool: the plugin name, its distribution and version, and the kind of source."""

    plugin: str | None = None
    distribution: str | None = None
    version: str | None = None
    source: str | None = None  # "entry point", "drop-in", "mcp", "api"


_NO_PROVENANCE = Provenance()
_provenance: ContextVar[Provenance] = ContextVar("hermes_provenance", default=_NO_PROVENANCE)


def current_provenance() -> Provenance:
    return _provenance.get()


@contextlib.contextmanager
def provenance(value: Provenance) -> Iterator[None]:
    """Attribute every registration made inside the block to ``value``."""
    token = _provenance.set(value)
    try:
        yield
    finally:
        _provenance.reset(token)


_CO_COROUTINE = 0x80  # the code flag of an ``async def`` function


def _is_coroutine_function(fn: object) -> bool:
    """``inspect.iscoroutinefunction`` without importing inspect (partials, methods and async callables)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        call = getattr(type(fn), "__call__", None)  # noqa: B004 - an object whose __call__ is async
        code = getattr(getattr(call, "__func__", call), "__code__", None)
    return bool(code is not None and code.co_flags & _CO_COROUTINE)


def _is_mcp(toolset: str) -> bool:
    return toolset.startswith("mcp-")


@dataclass(kw_only=True, slots=True, eq=False, repr=False)
class ToolEntry:
    """One registered tool: these fields are what ``register(...)`` takes (keywords only).

    Treat an entry as read-only; register again with ``replace=True`` to change a tool. Its provenance
    (``plugin``, ``distribution``, ``version``, ``source``) is set by the registry from the plugin being loaded,
    never by the caller.
    """

    name: str
    toolset: str
    schema: dict[str, Any]
    handler: Callable[..., Any]
    check_fn: Callable[..., Any] | None = None
    """``check_fn()`` (or ``check_fn(system)``): truthy, ``(ok, reason)`` or ``Unavailable(reason)``."""
    requires_env: Sequence[str] = ()
    """Environment variables that must be set for the tool to be available (a tuple once registered)."""
    is_async: bool | None = None
    """None: read from the handler (an ``async def`` handler is async)."""
    description: str = ""
    """Empty: the schema's ``description``."""
    emoji: str = ""
    max_result_size_chars: int | None = None
    dynamic_schema_overrides: Callable[..., Mapping[str, Any] | None] | None = None
    parallel_safe: bool = False
    """Calls may run concurrently with other parallel-safe calls of the same turn."""
    timeout: float | None = None
    handler_style: str | None = None
    """``"kwargs"`` (``handler(**args)``), ``"dict"`` (``handler(args, **kw)``) or None: from the signature."""
    annotations: Mapping[str, Any] | None = None
    """MCP-style hints (readOnlyHint, destructiveHint, idempotentHint, openWorldHint, title); None: derived."""
    max_argument_chars: int | None = None
    """The largest arguments (JSON characters) a call may bring; None: the config's ``[limits] max_argument_chars``."""
    plugin: str | None = field(default=None, init=False)
    distribution: str | None = field(default=None, init=False)
    version: str | None = field(default=None, init=False)
    source: str | None = field(default=None, init=False)  # "entry point", "drop-in", "mcp", "api"
    _runtime: Any = field(default=None, init=False)  # the pipeline's compiled per-tool state (first call)

    def __post_init__(self) -> None:
        requires = self.requires_env
        self.requires_env = (requires,) if isinstance(requires, str) else tuple(requires)
        self.is_async = bool(_is_coroutine_function(self.handler) if self.is_async is None else self.is_async)
        if not self.description:
            self.description = (
                str(self.schema.get("description", "")) if isinstance(self.schema, dict) else ""
            )
        if self.annotations is not None:
            self.annotations = dict(self.annotations)

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the arguments (``schema["parameters"]``)."""
        params = self.schema.get("parameters")
        return params if isinstance(params, dict) else {"type": "object", "properties": {}}

    def provenance(self) -> Provenance:
        return Provenance(self.plugin, self.distribution, self.version, self.source)

    def __repr__(self) -> str:
        return f"<ToolEntry {self.name!r} toolset={self.toolset!r} plugin={self.plugin!r}>"


FIELDS = tuple(f.name for f in fields(ToolEntry) if f.init)
"""The fields ``register`` takes, besides ``replace``; the first ``POSITIONAL`` may also come by position."""
POSITIONAL = 11  # name ... dynamic_schema_overrides: the positional order registrations have always had
_FIELD_SET = frozenset(FIELDS)
_REQUIRED_SET = frozenset(FIELDS[:4])  # name, toolset, schema, handler


def _check_shape(name: object, toolset: object, schema: object, handler: object) -> None:
    """Cheap structural checks done on every registration (the metaschema check is the checker's job)."""
    if not isinstance(name, str) or not name:
        raise InvalidSchemaError(f"tool name must be a non-empty string, got {name!r}")
    if not isinstance(toolset, str) or not toolset:
        raise InvalidSchemaError(f"tool {name!r}: toolset must be a non-empty string, got {toolset!r}")
    if not callable(handler):
        raise InvalidSchemaError(f"tool {name!r}: handler must be callable, got {type(handler).__name__}")
    if not isinstance(schema, dict):
        raise InvalidSchemaError(f"tool {name!r}: schema must be a dict, got {type(schema).__name__}")
    schema_name = schema.get("name")
    if schema_name != name:
        raise InvalidSchemaError(f"tool {name!r}: schema names the tool {schema_name!r}; the two must agree")
    params = schema.get("parameters", None)
    if params is not None and (not isinstance(params, dict) or params.get("type", "object") != "object"):
        raise InvalidSchemaError(
            f"tool {name!r}: schema['parameters'] must be a JSON Schema object with type 'object'"
        )


class ToolRegistry:
    """A thread-safe set of ``ToolEntry`` with a generation counter bumped on every change.

    ``schema_checker(name, schema)`` is called before a registration is accepted and raises
    ``InvalidSchemaError`` to refuse it; the tool system installs one that checks the metaschema.
    """

    def __init__(self, *, schema_checker: SchemaCheck | None = None) -> None:
        self._entries: dict[str, ToolEntry] = {}
        self._lock = threading.RLock()
        self.generation = 0  # bumped by every successful register or deregister (read it, never write it)
        self._snapshot: tuple[int, tuple[ToolEntry, ...]] = (0, ())
        self._by_plugin: dict[str | None, dict[str, ToolEntry]] = {}  # kept as tools come and go
        self.schema_checker = schema_checker
        self.arbiter: Arbiter | None = None  # decides clashes between plugins (set by the plugin host)
        # told of refusals while a plugin loads (set by the plugin host: the plugin loses that tool alone)
        self.on_refusal: RefusalHandler | None = None

    def register(self, *args: Any, replace: bool = False, **fields: Any) -> ToolEntry:
        """Register a tool and return its entry; ``fields`` are ``ToolEntry``'s (``name``, ``toolset``,
        ``schema``, ``handler``, ``check_fn``...). The first ones may come by position, in that order
        (``register(name, toolset, schema, handler)``).

        Raises ``ToolNameConflict`` when another toolset owns the name, ``ToolAlreadyRegistered`` when the
        same toolset registers it twice, unless ``replace=True``; tools in ``mcp-*`` toolsets may replace
        each other. Raises ``InvalidSchemaError`` for a malformed schema or an unknown field. A refused
        registration changes nothing. When the name belongs to another plugin, the registry's ``arbiter``
        (installed by the plugin host) rules first: a first-party built-in keeps its name even against
        ``replace=True`` (``ReservedToolName``) unless the config's ``[tools] override`` says otherwise.
        ``annotations`` are MCP-style behaviour hints that ``hermes mcp serve`` publishes; without them a
        parallel-safe tool counts as read-only and any other tool as possibly destructive.
        ``handler_style="dict"`` declares a ``handler(args: dict, **kw)`` handler (the reference system's
        convention); left out, the style is read from the handler's signature.
        """
        if args:
            if len(args) > POSITIONAL:
                raise InvalidSchemaError(
                    f"register takes at most {POSITIONAL} positional fields, got {len(args)}"
                )
            twice = [f for f in FIELDS[: len(args)] if f in fields]
            if twice:
                raise InvalidSchemaError(f"register got {', '.join(twice)} both by position and by name")
            fields.update(zip(FIELDS, args, strict=False))
        name = fields.get("name")
        if not (fields.keys() <= _FIELD_SET and fields.keys() >= _REQUIRED_SET):
            unknown = sorted(fields.keys() - _FIELD_SET)
            missing = [f for f in FIELDS[:4] if f not in fields]
            problem = f"unknown field(s) {unknown}" if unknown else f"missing {', '.join(missing)}"
            raise InvalidSchemaError(
                f"tool {name!r}: {problem}; register takes {', '.join(FIELDS)} and replace"
            )
        _check_shape(name, fields["toolset"], fields["schema"], fields["handler"])
        assert isinstance(name, str)  # _check_shape refused anything else
        style = fields.get("handler_style")
        if style not in (None, "kwargs", "dict"):
            raise InvalidSchemaError(
                f"tool {name!r}: handler_style must be 'kwargs' or 'dict', not {style!r}"
            )
        for option in ("max_result_size_chars", "max_argument_chars"):
            value = fields.get(option)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                raise InvalidSchemaError(f"tool {name!r}: {option} must be a positive int")
        entry = ToolEntry(**fields)
        origin = _provenance.get()
        entry.plugin, entry.distribution, entry.version, entry.source = (
            origin.plugin,
            origin.distribution,
            origin.version,
            origin.source,
        )
        if self.schema_checker is not None:
            try:
                self.schema_checker(name, fields["schema"])
            except InvalidSchemaError as err:
                if self.on_refusal is not None and self.on_refusal(entry, err):
                    return entry
                raise
        return self.add(entry, replace=replace)

    def add(self, entry: ToolEntry, *, replace: bool = False) -> ToolEntry:
        """Insert a ready-made entry under the same conflict rules as ``register``."""
        try:
            return self._add(entry, replace)
        except RegistrationError as err:
            if self.on_refusal is not None and self.on_refusal(entry, err):
                return entry
            log.error("%s", err)
            raise

    def _add(self, entry: ToolEntry, replace: bool) -> ToolEntry:
        with self._lock:
            existing = self._entries.get(entry.name)
            if existing is not None and self.arbiter is not None and existing.plugin != entry.plugin:
                ruling = self.arbiter(existing, entry, replace)
                if ruling == "keep":
                    return existing
                if ruling == "replace":
                    replace = True
            if existing is not None and not replace:
                if existing.toolset != entry.toolset:
                    if not (_is_mcp(existing.toolset) and _is_mcp(entry.toolset)):
                        raise ToolNameConflict(entry.name, existing, entry.toolset)
                else:
                    raise ToolAlreadyRegistered(entry.name, entry.toolset)
            if existing is not None:
                self._unindex(existing)
            self._entries[entry.name] = entry
            self._by_plugin.setdefault(entry.plugin, {})[entry.name] = entry
            self.generation += 1
        return entry

    def _unindex(self, entry: ToolEntry) -> None:
        mine = self._by_plugin.get(entry.plugin)
        if mine is not None and mine.get(entry.name) is entry:
            del mine[entry.name]
            if not mine:
                del self._by_plugin[entry.plugin]

    def deregister(self, name: str) -> ToolEntry | None:
        """Remove a tool; returns its entry, or None when it was not registered (nothing changes)."""
        with self._lock:
            entry = self._entries.pop(name, None)
            if entry is not None:
                self._unindex(entry)
                self.generation += 1
            return entry

    def deregister_toolset(self, toolset: str) -> list[ToolEntry]:
        """Remove every tool of a toolset (used when an MCP server goes away)."""
        with self._lock:
            gone = [e for e in self._entries.values() if e.toolset == toolset]
            for entry in gone:
                del self._entries[entry.name]
                self._unindex(entry)
            if gone:
                self.generation += 1
            return gone

    def get(self, name: str) -> ToolEntry | None:
        return self._entries.get(name)

    def view(self) -> Mapping[str, ToolEntry]:
        """A live, read-only ``name -> entry`` mapping (it follows every later change; lookups cost a dict's)."""
        return MappingProxyType(self._entries)

    def __getitem__(self, name: str) -> ToolEntry:
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> tuple[ToolEntry, ...]:
        """A consistent snapshot of all entries in registration order."""
        gen, snap = self._snapshot
        if gen == self.generation and (snap or not self._entries):
            return snap
        with self._lock:
            snap = tuple(self._entries.values())
            self._snapshot = (self.generation, snap)
            return snap

    def entries_of(self, plugin: str | None) -> tuple[ToolEntry, ...]:
        """The entries registered by ``plugin``, in registration order (costs the plugin's tools, not the
        registry's: loading stays linear in the number of plugins)."""
        with self._lock:
            return tuple(self._by_plugin.get(plugin, {}).values())

    def __iter__(self) -> Iterator[ToolEntry]:
        return iter(self.entries())

    def names(self) -> list[str]:
        return [e.name for e in self.entries()]

    def toolsets(self) -> dict[str, list[str]]:
        """Atomic toolsets: each toolset name with its tool names."""
        out: dict[str, list[str]] = {}
        for entry in self.entries():
            out.setdefault(entry.toolset, []).append(entry.name)
        return out


_default_registry = ToolRegistry()
_bound: ContextVar[ToolRegistry | None] = ContextVar("hermes_registry", default=None)


@contextlib.contextmanager
def bound_registry(target: ToolRegistry) -> Iterator[ToolRegistry]:
    """Make the module-level ``registry`` forward to ``target`` inside the block."""
    token = _bound.set(target)
    try:
        yield target
    finally:
        _bound.reset(token)


class PluginScope:
    """``bound_registry(registry)`` and ``provenance(origin)`` in one block: what the plugin host enters for each
    plugin it loads (a class, not two generator context managers: ~7 us less per drop-in file)."""

    __slots__ = ("_origin", "_registry", "_tokens")

    def __init__(self, registry: ToolRegistry, origin: Provenance) -> None:
        self._registry = registry
        self._origin = origin

    def __enter__(self) -> ToolRegistry:
        self._tokens = (_bound.set(self._registry), _provenance.set(self._origin))
        return self._registry

    def __exit__(self, *exc: object) -> None:
        bound, origin = self._tokens
        _provenance.reset(origin)
        _bound.reset(bound)


def current_registry() -> ToolRegistry:
    """The registry bound in the current context (see ``bound_registry``), else the process-wide default."""
    bound = _bound.get()
    return bound if bound is not None else _default_registry
