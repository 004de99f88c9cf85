"""``ToolSystem``: the facade an agent talks to. ``load()``, ``definitions()``, ``call()``, ``acall()``, ``call_many()``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from . import paths
from ._log import get_logger
from .config import Config, load_config
from .context import CallContext, Guard, approver_override, workspace_override
from .decisions import CallOutcome
from .host import AskUser, SystemHost
from .plugins import PluginHost, PluginRecord
from .plugins._hooks import HookRunner
from .registry import ToolEntry, ToolRegistry
from .schema import SchemaChecker
from .selection import ALL, Availability, Names, Selector, Toolsets, names_key
from .selection.deferral import Deferral, LoadedTools, SearchSettings
from .session import Session, Sessions
from .stash import Stash

if TYPE_CHECKING:
    from .selection import SearchResult

__all__ = ["ToolSystem"]

log = get_logger("hermes")

T = TypeVar("T")
ToolCallSpec = tuple[str, Any] | Mapping[str, Any]
_LOADED = "tools.loaded"  # the session stash key of its LoadedTools


def _env_list(var: str) -> list[str] | None:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return [p.strip() for p in raw.split(",") if p.strip()]


def _scheduler_opted_in(config: Config) -> bool:
    settings = config.data.get("scheduler")
    return isinstance(settings, dict) and settings.get("in_process") is True


def _env_flag(var: str) -> bool:
    return os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}


class ToolSystem:
    """One isolated tool system: its own registry, plugin manager, toolsets, checks and call pipeline."""

    def __init__(
        self,
        *,
        config: Config | None = None,
        workspace: str | os.PathLike[str] | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
        session_id: str = "default",
        check_schemas: bool = True,
        strict: bool = False,
        blocked: Iterable[str] = (),
    ) -> None:
        self.config = config if config is not None else Config()
        self.cache_dir = paths.cache_dir()
        self.data_dir = paths.data_dir()
        self.results_dir = self.data_dir / "results"  # full outputs of results cut to their size limit
        checker = SchemaChecker(self.cache_dir / "schema-verdicts.json") if check_schemas else None
        self._schema_checker = checker
        self.registry = ToolRegistry(schema_checker=checker)
        self.plugins = PluginHost(
            self.registry,
            strict=strict,
            blocked=blocked,
            overrides=self.config.tool_overrides,
            on_failure=self.config.on_failure,
        )
        self.toolsets = Toolsets(self.registry)
        self.toolset_errors: list[str] = []
        self.availability = Availability(
            ttl=self.config.check_ttl, timeout=self.config.check_timeout, system=self
        )
        ws = workspace if workspace is not None else self.config.workspace
        self.workspace = Path(ws).expanduser().resolve() if ws is not None else Path.cwd()
        self.session_id = session_id
        self.ask_user = ask_user
        self.approver = approver
        self.selector = Selector(
            self.registry,
            self.toolsets,
            self.availability,
            default_enabled=tuple(self.config.enabled_toolsets or (ALL,)),
            config_disabled=self.config.disabled_toolsets,
            config_disabled_tools=self.config.disabled_tools,
            owner=self,
        )
        self.search_settings = SearchSettings.from_config(self.config)
        self._search_mode = self.search_settings.mode
        self.deferral = Deferral(self.selector, self.search_settings, self._tool_rankers)
        self._rankers: dict[str, Any] | None = None
        from .pipeline import Pipeline
        from .pipeline._guard import LazyGuard

        self._guard = LazyGuard(self._security_gate)
        self._host = SystemHost(self)
        self.sessions = Sessions()
        self.pipeline = Pipeline(
            tools=self.registry.view(),
            select=self.selector.current,
            settle=self.selector.settle,
            config=self.config,
            hooks=self.plugins.hooks,
            guard=self._guard,
            new_context=self._new_context,
            results_dir=self.results_dir,
        )
        self._stash = Stash()
        self.pipeline.closers.append(self._stash.close)  # first in, so closed last of the closers
        self.pipeline.closers.append(self.sessions.close_all)  # sessions close before the system's stash
        self._closed = False
        self._mcp: Any = None  # the MCP client (hermes_core.mcp.client.McpClients) once servers start
        self._scheduler: Any = None  # hermes_core.scheduler.Scheduler once start_scheduler() ran

    def _security_gate(self) -> Guard:
        from .pipeline._guard import SecurityGuard  # the security layer loads with the first guarded action

        return SecurityGuard(self.config, self.approver, self.results_dir)

    @property
    def guard(self) -> Guard:
        """The security gate of this system's calls: command and path guards and the approval flow (built on first
        use). Assign another ``Guard`` to replace it (``hermes_core.testing.unguarded`` does, for the sandbox's
        tests)."""
        return self._guard

    @guard.setter
    def guard(self, guard: Guard) -> None:
        self._guard.use(guard)

    @property
    def host(self) -> SystemHost:
        """This system as its tools see it (``context.host``): the narrow ``hermes_core.host.Host`` protocol."""
        return self._host

    def tool(self, name: str) -> ToolEntry | None:
        """The registered entry of tool ``name`` (read-only), or None."""
        return self.registry.get(name)

    @property
    def hooks(self) -> HookRunner:
        """The hook runner: every hook of this system's plugins is called through it (``hooks.call``, ``each``)."""
        return self.plugins.hooks

    def _new_context(
        self,
        call_id: str,
        session_id: str | None,
        tool_name: str,
        enabled: frozenset[str],
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> CallContext:
        return CallContext(
            call_id=call_id,
            session_id=session_id or self.session_id,
            workspace=workspace_override() or self.workspace,  # a cron job runs in its recorded workspace
            tool_name=tool_name,
            host=self._host,
            ask_user=ask_user if ask_user is not None else self.ask_user,
            guard=self._guard,
            enabled=self.selector.selected(enabled),
            approver=approver if approver is not None else approver_override(),  # a scheduled job's
        )

    # -- sessions ----------------------------------------------------------------------------------------

    def session(self, session_id: str | None = None) -> Session:
        """The open session ``session_id`` (default: the system's own ``session_id``), opened on first use.

        Per-conversation state lives there (``session.stash``) and is released by ``close_session`` or ``close``.
        """
        return self.sessions.get(session_id or self.session_id)

    def close_session(self, session_id: str) -> bool:
        """End session ``session_id``: its processes, environment, other state and "session" approvals are
        released now."""
        try:
            return self.sessions.close(session_id)
        finally:
            self._guard.forget_session(session_id)

    # -- construction ------------------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        plugins_dir: str | os.PathLike[str] | Literal[False] | None = None,
        load_entry_points: bool = True,
        config: str | os.PathLike[str] | Mapping[str, Any] | Config | None = None,
        *,
        plugins: Iterable[object] = (),
        workspace: str | os.PathLike[str] | None = None,
        strict: bool | None = None,
        blocked: Iterable[str] = (),
        approver: Any = None,
        ask_user: AskUser | None = None,
        session_id: str = "default",
        check_schemas: bool = True,
        mcp: bool = True,
        enabled: Names = None,
        disabled: Names = None,
        scheduler: bool | None = None,
    ) -> ToolSystem:
        """Build a system: read the config, load entry points, drop-ins and ``plugins``, run their hooks.

        ``plugins_dir`` defaults to the drop-in folder (``$HERMES_HOME/plugins``); pass ``False`` to skip it.
        ``HERMES_LOAD_PLUGINS`` (comma-separated names) limits which entry points load, ``HERMES_BLOCK_PLUGINS``
        and the config's ``plugins.blocked`` block some, ``HERMES_STRICT_PLUGINS=1`` or ``strict=True`` turn a
        broken plugin into an error. Broken plugins are otherwise recorded in ``system.plugin_records()``.

        ``enabled``/``disabled`` (toolsets or tool names) set the host's selection, replacing the config's: it is
        what ``definitions()`` offers and all that ``call()``, ``acall()`` and ``call_many()`` will run when a
        call passes no selection of its own; a call to any other tool is refused with a message for the model.

        ``scheduler=True`` (or ``[scheduler] in_process = true``) runs the scheduled jobs in this process
        (``start_scheduler``); without it nothing of the scheduler is imported.
        """
        cfg = load_config(config)
        if strict is None:
            strict = _env_flag("HERMES_STRICT_PLUGINS") or cfg.strict_plugins
        blocked_all = {*blocked, *cfg.blocked_plugins, *(_env_list("HERMES_BLOCK_PLUGINS") or [])}
        system = cls(
            config=cfg,
            workspace=workspace,
            approver=approver,
            ask_user=ask_user,
            session_id=session_id,
            check_schemas=check_schemas,
            strict=strict,
            blocked=blocked_all,
        )
        if enabled is not None:
            system.selector.default_enabled = names_key(enabled) or ()
        if disabled is not None:
            system.selector.default_disabled = names_key(disabled)
        manager = system.plugins
        if load_entry_points:
            only = _env_list("HERMES_LOAD_PLUGINS")
            if only is None:
                only = cfg.load_plugins
            manager.load_entry_points(
                system.cache_dir / "entry-points.json", frozenset(only) if only is not None else None
            )
        # the built-ins register before any drop-in file runs or any other plugin is added: they own their names
        others = []
        for plugin in plugins:
            if manager.is_first_party_object(plugin):
                manager.add_plugin(plugin)
            else:
                others.append(plugin)
        manager.run_register_tools(first_party_only=True)
        if plugins_dir is not False:
            directory = Path(plugins_dir).expanduser() if plugins_dir is not None else paths.plugins_dir()
            manager.load_directory(directory, system.cache_dir)
        for plugin in others:
            manager.add_plugin(plugin)
        manager.run_register_tools()
        manager.run_register_toolsets(system._define_plugin_toolsets)
        system._check_plugin_config()
        for name, spec in cfg.custom_toolsets.items():
            system._define_config_toolset(name, spec)
        if system._schema_checker is not None:
            system._schema_checker.flush()
        system.pipeline.refresh_hooks()
        # no check starts here: the first selection (definitions, a call) starts them all at once, off the
        # call path; started at load, their threads fought the load for the GIL and the import lock
        if mcp and cfg.mcp_servers:
            system._start_mcp()
        if scheduler or (scheduler is None and _scheduler_opted_in(cfg)):
            system.start_scheduler()
        return system

    def _check_plugin_config(self) -> None:
        """Each plugin's ``[plugins.<section>]`` tables against the schemas it declares (see ``PluginHost``)."""
        where = str(self.config.path) if self.config.path is not None else "the configuration file"
        self.plugins.check_config(lambda name: self.config.data.get("plugins", {}).get(name), where)

    def _define_plugin_toolsets(self, specs: Mapping[str, Any], plugin: str | None) -> None:
        """A plugin's composite toolsets; a built-in composite (``hermes-cli``...) is the built-ins' alone."""
        from .selection import ToolsetError

        first_party = self.plugins.arbiter.first_party
        if plugin not in first_party:
            owners = self.toolsets.composites()
            for name in specs:
                owner = owners.get(name)
                if owner is not None and owner.plugin in first_party:
                    raise ToolsetError(
                        f"toolset {name!r} belongs to the built-ins (plugin {owner.plugin!r}); plugin "
                        f"{plugin!r} may not redefine it: give the toolset another name"
                    )
        self.toolsets.define_many(specs, plugin)

    def _define_config_toolset(self, name: str, spec: Any) -> None:
        """A ``[toolsets.custom]`` entry; a bad one is recorded (the doctor shows it), not fatal."""
        from .selection import ToolsetError

        try:
            self.toolsets.define(name, spec, "config")
        except ToolsetError as err:
            self.toolset_errors.append(str(err))
            log.error("config: %s", err)

    def _start_mcp(self) -> None:
        from .mcp.client import start_servers  # imports the optional mcp SDK only when it connects

        self._mcp = start_servers(self)

    def mcp_status(self) -> dict[str, dict[str, Any]]:
        """Per configured MCP server: ``state`` (connecting, ready, reconnecting, failed, disabled, closed),
        ``tools`` (registered names), ``error`` (the last one, also while reconnecting), ``renamed``,
        ``clashes``, ``skipped`` and ``hidden`` tools with the reason, ``server``/``version`` and its ``log``."""
        return self._mcp.status() if self._mcp is not None else {}

    def wait_mcp(self, timeout: float = 30.0) -> bool:
        """Wait until no MCP server is connecting for the first time; True when all settled in time.

        A server that failed and retries in the background counts as settled (``reconnecting``). Call it from a
        thread other than the system's async loop.
        """
        return self._mcp.wait(timeout) if self._mcp is not None else True

    def mcp_restart(self, name: str) -> bool:
        """Reconnect MCP server ``name`` now (a stdio server gets a new process), whatever its backoff.

        Returns False when the server is not running (disabled, misconfigured, system closed); raises
        ``KeyError`` for a name that is not configured.
        """
        if self._mcp is None:
            raise KeyError(f"no MCP server named {name!r} (none configured)")
        return bool(self._mcp.restart(name))

    # -- scheduler ---------------------------------------------------------------------------------------

    @property
    def scheduler(self) -> Any:
        """The ``hermes_core.scheduler.Scheduler`` running in this process, or None."""
        return self._scheduler

    def start_scheduler(self, **options: Any) -> Any:
        """Run the scheduled jobs in this process (a daemon thread, stopped by ``close``) and return the
        ``Scheduler``; ``options`` go to its constructor. Several processes may do this: each slot runs once."""
        if self._scheduler is None:
            from .scheduler import Scheduler

            self._scheduler = Scheduler(self, **options)
            self.on_close(self._scheduler.stop)
        self._scheduler.start()
        return self._scheduler

    # -- plugins -----------------------------------------------------------------------------------------

    def register_plugin(self, plugin: object, name: str | None = None) -> PluginRecord:
        """Add a plugin (module or object with ``@hookimpl`` functions) to a loaded system.

        Its tools and toolsets are registered as at load time: a ``register_tools`` that raises leaves nothing
        behind and is recorded on the returned record (raised in strict mode).
        """
        record = self.plugins.add_plugin(plugin, name)
        if record.status == "loaded":
            self.plugins.run_register_tools(only=plugin)
            self.plugins.run_register_toolsets(self._define_plugin_toolsets, only=plugin)
            self._check_plugin_config()
        self.pipeline.refresh_hooks()
        self._forget_rankers()
        return record

    def unregister_plugin(self, name: str) -> None:
        """Remove a plugin's hooks, its tools and its toolsets."""
        plugin = self.plugins.pm.get_plugin(name)
        if plugin is not None:  # the plugin, or the stand-in of a failed one refusing calls
            self.plugins.pm.unregister(plugin)
        for entry in self.registry.entries_of(name):
            self.registry.deregister(entry.name)
        self.toolsets.remove_plugin(name)
        self.pipeline.refresh_hooks()
        self._forget_rankers()

    def _forget_rankers(self) -> None:
        self._rankers = None
        self.deferral.forget()

    def plugin_records(self) -> list[PluginRecord]:
        return list(self.plugins.records.values())

    def plugin_config(self, name: str) -> dict[str, Any]:
        """The ``[plugins.<name>]`` section of the configuration, with env/file secrets resolved."""
        return self.config.plugin_section(name)

    # -- selection ---------------------------------------------------------------------------------------

    def available(
        self, enabled: Names = None, disabled: Names = None, disabled_tools: Names = None
    ) -> frozenset[str]:
        """Names of the tools the model may see (and run) for this selection right now."""
        return self.selector.select(enabled, disabled, disabled_tools).available

    def availability_of(self, name: str) -> tuple[bool, str]:
        """``(ok, reason)`` for one registered tool, ignoring toolset selection."""
        entry = self.registry.get(name)
        if entry is None:
            return False, "not registered"
        return self.availability.verdicts([entry])[name]

    def invalidate_checks(self) -> None:
        """Drop cached check verdicts, so the next ``definitions()`` or call re-runs every check."""
        self.selector.invalidate()

    def tool_schema(self, entry: ToolEntry, available: frozenset[str]) -> dict[str, Any]:
        """The schema the model sees for ``entry``: registered schema plus its dynamic overrides."""
        return self.selector.tool_schema(entry, available)

    def definitions(
        self,
        enabled: Names = None,
        disabled: Names = None,
        disabled_tools: Names = None,
        *,
        format: str = "openai",
        search: str | None = None,
        session_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """The tool definitions the model may see this turn, in ``format`` (openai, anthropic, gemini, mcp).

        ``enabled`` defaults to the config's ``toolsets.enabled`` (else every tool). Tools whose check fails or
        whose required environment variables are unset are left out. ``search`` (``auto``, ``on``, ``off``;
        default ``[tools] search``, itself ``auto``) defers tools behind ``tool_search`` when the selection does
        not fit the budget: then the core tools, ``tool_search`` and the tools session ``session_id`` (default:
        the system's) has loaded are sent (see ``hermes_core.selection.deferral``). An agent loop calls this
        every turn with its session. The returned dicts are shared: do not mutate them.
        """
        selector = self.selector
        sel = selector.select(enabled, disabled, disabled_tools)
        mode = search or self._search_mode
        deferred = sel.deferred.get(mode)
        if deferred is False:  # the common case: everything fits (or search is off)
            rendered = sel.rendered.get(format)
            return list(rendered if rendered is not None else selector.definitions(sel, format))
        if deferred is None:
            deferred = sel.deferred[mode] = self.deferral.defers(sel, self.deferral.mode(mode))
            if not deferred:
                return list(selector.definitions(sel, format))
        session = self.sessions.peek(session_id or self.session_id)
        loaded = session.peek(_LOADED) if session is not None else None
        return list(self.deferral.definitions(sel, format, loaded))

    def loaded_tools(self, session_id: str | None = None) -> LoadedTools:
        """The deferred tools session ``session_id`` (default: the system's) has loaded, with its search counts."""
        return self.session(session_id).stash(_LOADED, LoadedTools, cleanup=lambda _loaded: None)

    def search_tools(
        self,
        query: str,
        *,
        limit: int = 5,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        available: frozenset[str] | None = None,
        load: bool = True,
        everything: bool = False,
    ) -> SearchResult:
        """Search the deferrable tools of a selection (``available``, else ``enabled``/``disabled``) for
        ``query``, or load ``select:NAME,NAME``. With ``load`` the matches are loaded into session
        ``session_id`` and sent in full on its next turns; ``everything`` ranks the core tools too."""
        if available is None:
            available = self.selector.select(enabled, disabled, None).available
        loaded = self.loaded_tools(session_id) if load else None
        return self.deferral.search(available, query, max(1, int(limit)), loaded, everything)

    def _note_calls(
        self, names: Iterable[str], enabled: Names, disabled: Names, session_id: str | None
    ) -> None:
        """Calls of deferred tools by exact name load them into the session (and are counted)."""
        available = self.selector.select(enabled, disabled, None).available
        loaded = self.loaded_tools(session_id)
        for name in names:
            if isinstance(name, str) and name in available:
                self.deferral.note_call(name, available, loaded)

    def _tool_rankers(self) -> dict[str, Any]:
        """Ranker factories by name, from every plugin's ``register_tool_rankers`` (asked once per plugin set)."""
        if self._rankers is None:
            found: dict[str, Any] = {}
            for answer in self.hooks.call("register_tool_rankers") or ():
                if isinstance(answer, Mapping):
                    found.update({str(k): v for k, v in answer.items() if callable(v)})
            self._rankers = found
        return self._rankers

    def hidden(
        self, enabled: Names = None, disabled: Names = None, disabled_tools: Names = None
    ) -> dict[str, str]:
        """Selected tools that are hidden now, with the reason (missing env var, failing check...)."""
        return dict(self.selector.select(enabled, disabled, disabled_tools).hidden)

    # -- calls -------------------------------------------------------------------------------------------

    def call(
        self,
        name: str,
        arguments: Any = None,
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        call_id: str | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> str:
        """Run one tool call through the pipeline and return what the model should see. Never raises.

        ``approver``/``ask_user`` answer for this call instead of the system's (an MCP client, a chat window).
        Under ``hermes_core.cancellation.cancel_scope(token)``, ``token.cancel()`` stops the call while it runs.
        """
        outcome = self.pipeline.run(
            name, arguments, enabled, disabled, session_id, call_id, approver, ask_user
        )
        if self.deferral.active:
            self._note_calls((name,), enabled, disabled, session_id)
        return outcome.result

    def call_outcome(
        self,
        name: str,
        arguments: Any = None,
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        call_id: str | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> CallOutcome:
        """Like ``call`` but returns the whole ``CallOutcome`` (status, duration, error kind and id)."""
        outcome = self.pipeline.run(
            name, arguments, enabled, disabled, session_id, call_id, approver, ask_user
        )
        if self.deferral.active:
            self._note_calls((name,), enabled, disabled, session_id)
        return outcome

    async def acall(
        self,
        name: str,
        arguments: Any = None,
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        call_id: str | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> str:
        """The native async form of ``call``: never blocks the caller's event loop."""
        outcome = await self.pipeline.arun(
            name, arguments, enabled, disabled, session_id, call_id, approver, ask_user
        )
        if self.deferral.active:
            self._note_calls((name,), enabled, disabled, session_id)
        return outcome.result

    async def acall_outcome(
        self,
        name: str,
        arguments: Any = None,
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        call_id: str | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> CallOutcome:
        outcome = await self.pipeline.arun(
            name, arguments, enabled, disabled, session_id, call_id, approver, ask_user
        )
        if self.deferral.active:
            self._note_calls((name,), enabled, disabled, session_id)
        return outcome

    def call_many(
        self,
        calls: Iterable[ToolCallSpec],
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        max_parallel: int | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> list[str]:
        """Run one model turn's calls: runs of parallel-safe tools go concurrently, the rest in order.

        Each call is ``(name, arguments)`` or ``{"name": ..., "arguments": ..., "id": ...}``; results come back
        in call order and one failure does not affect the others. At most ``max_parallel`` calls run at once
        (default: ``[limits] max_parallel_calls``, 32).
        """
        outcomes = self.call_many_outcomes(
            calls,
            enabled=enabled,
            disabled=disabled,
            session_id=session_id,
            max_parallel=max_parallel,
            approver=approver,
            ask_user=ask_user,
        )
        return [o.result for o in outcomes]

    def call_many_outcomes(
        self,
        calls: Iterable[ToolCallSpec],
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        max_parallel: int | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> list[CallOutcome]:
        """Like ``call_many`` but returns each call's whole ``CallOutcome``."""
        outcomes = self.pipeline.run_many(
            list(calls), enabled, disabled, session_id, max_parallel, approver, ask_user
        )
        if self.deferral.active:
            self._note_calls([o.name for o in outcomes], enabled, disabled, session_id)
        return outcomes

    # -- lifecycle ---------------------------------------------------------------------------------------

    def stash(self, key: str, factory: Callable[[], T], cleanup: Callable[[T], Any] | None = None) -> T:
        """Per-system state for plugins: the value under ``key``, made by ``factory()`` on first use.

        It is cleaned up when the system closes (``cleanup(value)``, else the value's own ``close()``). Use a key
        that names your plugin (``"weather.client"``) so plugins never collide.
        """
        return self._stash.get(key, factory, cleanup)

    def unstash(self, key: str) -> Any:
        """Drop ``key`` from the stash now, running its cleanup; the next ``stash(key, ...)`` makes a new one."""
        return self._stash.pop(key)

    def on_close(self, callback: Callable[[], Any]) -> None:
        """Run ``callback`` when the system closes (tools use it to stop background work)."""
        self.pipeline.closers.append(callback)

    def close(self) -> None:
        """Stop background work: the async loop, check threads, MCP servers, background processes."""
        if self._closed:
            return
        self._closed = True
        self.availability.close()  # first: a check still running then meets a closing system quietly
        self.pipeline.close()

    def __enter__(self) -> ToolSystem:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ToolSystem tools={len(self.registry)} plugins={len(self.plugins.records)}>"
