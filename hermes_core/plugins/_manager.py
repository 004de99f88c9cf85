"""Load plugins from every source into one pluggy manager, recording each plugin's fate.

One broken plugin never takes the others down: its error is recorded on its ``PluginRecord`` (shown by
``hermes plugins list`` and ``hermes plugins doctor``) and loading goes on, unless ``strict`` is set. A tool
refused while its plugin loads (a name another plugin owns, a schema the checker refuses) costs that tool
alone: the plugin keeps its other tools and its hooks, and the refusal is recorded on it. A plugin that fails
whole loses its hooks; what that means for calls is ``_policy``'s ``on_failure``.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import itertools
import sys
import time
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from .. import hookspecs
from .._blake import blake2b
from .._log import get_logger
from .._registry import PluginScope
from .._trace import trace
from ..registry import (
    Provenance,
    RegistrationError,
    ReservedToolName,
    ToolEntry,
    ToolRegistry,
    current_provenance,
)
from ._dropin import ScanVerdict, scan_directory
from ._dropin_code import CodeBundle
from ._entrypoints import EntryPointInfo, discover
from ._hooks import HookRunner, refusals
from ._policy import POLICY_HOOKS, Refusal, declared_hooks, failure_mode, unmarked_hooks
from ._precedence import Arbiter, announce_once, first_party_module, is_first_party_entry_point

__all__ = ["PluginHost", "PluginLoadError", "PluginRecord"]

log = get_logger("hermes.plugins")
_system_ids = itertools.count(1)


class PluginLoadError(RuntimeError):
    """Raised in strict mode when a plugin fails to load."""


@dataclass(slots=True)
class PluginRecord:
    """What happened to one plugin: where it came from, whether it loaded, what it provides."""

    name: str
    source: str  # "entry point", "drop-in", "api"
    status: str = "loaded"  # loaded | failed | blocked | skipped
    distribution: str | None = None
    version: str | None = None
    module: str | None = None
    path: str | None = None
    error: str | None = None
    stage: str | None = None  # import | register | register_tools | register_toolsets
    import_ms: float = 0.0
    hooks: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    note: str = ""
    first_party: bool = False  # the hermes-tools distribution's own ``builtin`` plugin (see _precedence)
    refused: dict[str, str] = field(default_factory=dict)  # tools refused while it loaded -> why
    config_problems: list[dict[str, str]] = field(default_factory=list)  # {section, path, message}
    unmarked: list[str] = field(default_factory=list)  # functions named after a hook but without @hookimpl
    on_failure: str = (
        ""  # for a failed plugin: "refuse" (calls are blocked) or "continue" (they run without it)
    )
    # parts of a loaded plugin that failed alone (``register_tools`` returned them): unit -> reason
    failed_units: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "status": self.status,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "path": self.path,
            "error": self.error,
            "stage": self.stage,
            "import_ms": round(self.import_ms, 3),
            "hooks": list(self.hooks),
            "tools": list(self.tools),
            "note": self.note,
            "first_party": self.first_party,
            "refused": dict(self.refused),
            "config_problems": [dict(p) for p in self.config_problems],
            "unmarked": list(self.unmarked),
            "on_failure": self.on_failure,
            "failed_units": dict(self.failed_units),
        }


def _error_text(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def _references_as_text(value: Any) -> Any:
    """A config section with ``{env = ...}``/``{file = ...}`` references as text: a secret is never echoed in a
    message, and a reference stands for a string."""
    if isinstance(value, dict):
        if len(value) == 1 and set(value) <= {"env", "file"}:
            return f"<from {next(iter(value))} {next(iter(value.values()))}>"
        return {k: _references_as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_references_as_text(v) for v in value]
    return value


class PluginHost:
    """A pluggy manager for one tool system, plus the record of every plugin it saw."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        strict: bool = False,
        blocked: Iterable[str] = (),
        overrides: Mapping[str, str] | None = None,
        on_failure: Mapping[str, str] | None = None,
    ) -> None:
        self.registry = registry
        self.strict = strict
        self.blocked = frozenset(blocked)
        self.on_failure = dict(on_failure or {})  # [plugins] on_failure (see _policy)
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.hooks = HookRunner(self.pm)
        self.records: dict[str, PluginRecord] = {}
        self._sid = next(_system_ids)
        self.arbiter = Arbiter(overrides=dict(overrides or {}))
        registry.arbiter = self.arbiter
        registry.on_refusal = self._refused_tool
        self._loading: str | None = None  # the plugin whose registration code runs now
        self._first_party_module: str | None = None
        self._tools_ran: set[str] = set()  # plugins whose register_tools already ran

    # -- bookkeeping -------------------------------------------------------------------------------------

    def _fail(self, record: PluginRecord, stage: str, err: BaseException, plugin: object = None) -> None:
        """Record a plugin that failed whole (``plugin``: its object, when it was imported) and apply the
        failure policy: a lost ``pre_tool_call`` refuses every call unless ``on_failure`` says otherwise."""
        record.status = "failed"
        record.stage = stage
        record.error = _error_text(err)
        record.hooks = declared_hooks(record, plugin)
        from ._fixes import failure_advice  # on failure only: a clean load never needs the advice

        advice = failure_advice(record)
        fix = f"; fix: {advice.fix}" if advice is not None else ""
        log.error("plugin %r failed at %s: %s%s", record.name, stage, record.error, fix, exc_info=err)
        if self.strict:
            raise PluginLoadError(f"plugin {record.name!r} failed at {stage}: {record.error}") from err
        record.on_failure = failure_mode(record, self.on_failure)
        lost = sorted(POLICY_HOOKS & set(record.hooks))
        if record.on_failure == "refuse":
            taken = self.pm.get_plugin(record.name) is not None  # a duplicate name: the first one loaded
            self.pm.register(Refusal(), name=f"{record.name}#failed" if taken else record.name)
            log.error(
                'plugin %r failed, so every tool call is refused until it loads ([plugins] on_failure = "refuse")',
                record.name,
            )
        elif lost:
            log.error(
                'plugin %r failed: tool calls run WITHOUT its %s hook ([plugins] on_failure = "continue")',
                record.name,
                ", ".join(lost),
            )

    def _refused_tool(self, entry: ToolEntry, err: RegistrationError) -> bool:
        """The registry refused one of the loading plugin's tools: that tool is lost, the plugin goes on."""
        plugin = current_provenance().plugin
        record = self.records.get(plugin) if plugin is not None else None
        if record is None or plugin != self._loading or self.strict:
            return False  # not a plugin being loaded (or strict loading): the error is raised
        self._lose(record, entry.name, err)
        return True

    def _lose(self, record: PluginRecord, tool: str, err: RegistrationError) -> None:
        record.refused[tool] = str(err)
        record.tools = [t for t in record.tools if t != tool]
        from ._fixes import refusal_advice  # on failure only: a clean load never needs the advice

        advice = refusal_advice(record, str(err))
        log.info("plugin %r lost its tool %r: %s; fix: %s", record.name, tool, advice.message, advice.fix)
        announce_once(record.name, tool, advice.message, advice.fix)

    def _partial(self, record: PluginRecord, failed: object) -> None:
        """Record the units a plugin's ``register_tools`` says failed alone (its other tools stay loaded)."""
        if not isinstance(failed, Mapping):
            log.warning(
                "plugin %r: register_tools returned %r, not a mapping of failed units", record.name, failed
            )
            return
        record.failed_units.update({str(unit): str(reason) for unit, reason in failed.items()})
        units = len(record.failed_units)
        record.note = f"{units} part{'s' if units != 1 else ''} failed to load (see hermes plugins doctor)"
        for unit, reason in failed.items():
            log.error("plugin %r: %s failed to load: %s", record.name, unit, reason)
        if self.strict:
            unit, reason = next(iter(record.failed_units.items()))
            raise PluginLoadError(f"plugin {record.name!r}: {unit} failed to load: {reason}")

    def _record(self, record: PluginRecord) -> PluginRecord:
        if record.name in self.records and self.records[record.name].status != "blocked":
            prior = self.records[record.name]
            record.status = "failed"
            record.stage = "register"
            record.error = (
                f"duplicate plugin name {record.name!r}: already provided by "
                f"{prior.distribution or prior.path or prior.source}"
            )
            log.error("%s", record.error)
            self.records[f"{record.name}#{len(self.records)}"] = record
            if self.strict:
                raise PluginLoadError(record.error)
            return record
        self.records[record.name] = record
        return record

    @staticmethod
    def _say_unmarked(record: PluginRecord) -> None:
        if not record.unmarked:
            return
        from ._fixes import unmarked_fix  # on failure only: a clean load never needs the advice

        for name in record.unmarked:
            fix = unmarked_fix(name)
            log.error(
                "plugin %r defines %s without @hookimpl, so it never runs; fix: %s", record.name, name, fix
            )

    def _add_to_pm(self, record: PluginRecord, plugin: object) -> bool:
        record.unmarked = unmarked_hooks(plugin)
        try:
            self.pm.register(plugin, name=record.name)
        except Exception as err:  # pluggy validation: unknown hook, bad argument names, same object twice
            self._fail(record, "register", err, plugin)
            return False
        refused = refusals(self.pm, plugin)
        if refused:  # hook options the runner cannot honour: refused loudly rather than misbehaving
            self.pm.unregister(plugin)
            self._fail(record, "register", pluggy.PluginValidationError(plugin, "; ".join(refused)), plugin)
            return False
        record.hooks = sorted(
            {impl.name for impl in self.pm.get_hookcallers(plugin) or []}  # type: ignore[attr-defined]
        )
        self._say_unmarked(record)
        return True

    # -- sources -----------------------------------------------------------------------------------------

    def load_entry_points(self, cache_file: Path | None, only: frozenset[str] | None = None) -> None:
        """Import every ``hermes.tools`` entry point (or only those named in ``only``), the built-ins first."""
        found = discover(cache_file)
        for ep in found:
            if is_first_party_entry_point(ep):
                self._first_party_module = ep.module
        for ep in sorted(found, key=lambda e: not is_first_party_entry_point(e)):
            self._load_entry_point(ep, only)

    def _load_entry_point(self, ep: EntryPointInfo, only: frozenset[str] | None) -> None:
        record = PluginRecord(
            name=ep.name,
            source="entry point",
            distribution=ep.distribution,
            version=ep.version,
            module=ep.value,
            first_party=is_first_party_entry_point(ep),
        )
        if ep.name in self.blocked or (ep.distribution and ep.distribution in self.blocked):
            record.status = "blocked"
            record.note = "blocked by configuration"
            self._record(record)
            return
        if only is not None and ep.name not in only and ep.distribution not in only:
            record.status = "blocked"
            record.note = "not listed in HERMES_LOAD_PLUGINS"
            self._record(record)
            return
        if self._record(record).status == "failed":
            return
        self._claim_precedence(record)
        start = time.perf_counter()
        try:
            obj: Any = importlib.import_module(ep.module)
            if ep.attr:
                for part in ep.attr.split("."):
                    obj = getattr(obj, part)
        except (Exception, SystemExit) as err:  # a plugin calling sys.exit() at import is broken, not fatal
            record.import_ms = (time.perf_counter() - start) * 1000
            self._fail(record, "import", err)
            return
        record.import_ms = (time.perf_counter() - start) * 1000
        self._add_to_pm(record, obj)

    def load_directory(self, directory: Path, cache_dir: Path | None) -> None:
        """Import the eligible drop-in files of ``directory`` (see ``_dropin``)."""
        cache_file = code_file = None
        if cache_dir is not None:
            digest = blake2b(str(directory.resolve()).encode(), digest_size=8).hexdigest()
            cache_file = cache_dir / f"dropin-{digest}.json"
            code_file = cache_dir / f"dropin-{digest}.code"
        # The files' objects live as long as the system: the cyclic collector would trace them all again at
        # each full collection while thousands load (the cost per file grew with the folder); paused meanwhile.
        paused = gc.isenabled()
        gc.disable()
        try:
            verdicts = scan_directory(directory, cache_file)
            if verdicts:
                code = CodeBundle(code_file)
                self._load_verdicts(verdicts, code)
                code.save()
        finally:
            if paused:
                gc.enable()

    def _load_verdicts(self, verdicts: Iterable[ScanVerdict], code: CodeBundle) -> None:
        for verdict in verdicts:
            name = f"dropin:{verdict.path.stem}"
            record = PluginRecord(
                name=name, source="drop-in", path=str(verdict.path), module=verdict.path.stem
            )
            if name in self.blocked or verdict.path.stem in self.blocked:
                record.status = "blocked"
                record.note = "blocked by configuration"
                self._record(record)
                continue
            if verdict.error is not None:
                self._record(record)
                self._fail(record, "scan", RuntimeError(verdict.error))
                continue
            if not verdict.eligible:
                record.status = "skipped"
                record.note = verdict.reason
                if verdict.problem:  # meant as a plugin, but the scan sees nothing it registers
                    record.stage, record.error = "scan", verdict.reason
                self._record(record)
                continue
            if self._record(record).status == "failed":
                continue
            self._exec_dropin(record, verdict, code)

    def _exec_dropin(self, record: PluginRecord, verdict: ScanVerdict, bundle: CodeBundle) -> None:
        path = verdict.path
        modname = f"hermes_dropin_{self._sid}.{path.stem}"
        origin = Provenance(plugin=record.name, source="drop-in")
        before = self.registry.generation
        start = time.perf_counter()
        module: types.ModuleType | None = None
        try:
            spec = importlib.util.spec_from_file_location(modname, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[modname] = module
            self._loading = record.name
            # the code as the import system would compile it, kept in one file for all drop-ins
            code = bundle.code(path, verdict.stamp, spec.loader, modname)  # type: ignore[arg-type]
            if code is None:
                raise ImportError(f"cannot load {path}")
            with PluginScope(self.registry, origin):
                exec(code, module.__dict__)
        except (Exception, SystemExit) as err:
            record.import_ms = (time.perf_counter() - start) * 1000
            sys.modules.pop(modname, None)
            self._rollback(record.name, before)
            self._fail(record, "import", err)
            return
        finally:
            self._loading = None
        record.import_ms = (time.perf_counter() - start) * 1000
        record.tools = [e.name for e in self.registry.entries_of(record.name)]
        marker = f"{hookspecs.PROJECT}_impl"
        # only functions can be hook implementations (pluggy looks at nothing else): asking a module that
        # forwards its attributes, such as hermes_core.registry, costs more than the rest of the check
        if any(callable(value) and hasattr(value, marker) for value in vars(module).values()):
            self._add_to_pm(record, module)
        else:
            record.unmarked = unmarked_hooks(module)
            self._say_unmarked(record)
            if not (record.tools or record.refused or record.unmarked):
                record.note = "imported, but it registered no tool and implements no hook" + (
                    f" ({verdict.detail})" if verdict.detail else ""
                )

    def add_plugin(self, plugin: object, name: str | None = None) -> PluginRecord:
        """Register an in-process plugin object or module (the ``plugins=`` argument, tests, hosts)."""
        if isinstance(plugin, str):
            plugin = importlib.import_module(plugin)
        label = name or getattr(plugin, "__name__", None) or f"plugin-{id(plugin):x}"
        record = PluginRecord(name=label, source="api", module=getattr(plugin, "__name__", None))
        record.first_party = self.is_first_party_object(plugin)
        if self._record(record).status != "failed":
            self._claim_precedence(record)
            self._add_to_pm(record, plugin)
        return record

    # -- hooks run at load time, one plugin at a time ----------------------------------------------------

    def _rollback(self, plugin_name: str, generation_before: int) -> None:
        if self.registry.generation == generation_before:
            return
        for entry in self.registry.entries_of(plugin_name):
            self.registry.deregister(entry.name)

    @contextlib.contextmanager
    def _registering(self, plugin_name: str) -> Iterator[None]:
        """Bind the registry and the plugin's provenance; a registration that raises is rolled back at once."""
        record = self.records.get(plugin_name)
        origin = (
            Provenance(record.name, record.distribution, record.version, record.source)
            if record is not None
            else Provenance(plugin_name)
        )
        before = self.registry.generation
        self._loading = plugin_name
        try:
            with PluginScope(self.registry, origin):
                yield
        except Exception:
            self._rollback(plugin_name, before)
            raise
        finally:
            self._loading = None

    def run_register_tools(self, only: object = None, *, first_party_only: bool = False) -> None:
        """Call every ``register_tools`` impl not yet run (or only ``only``'s, or only the built-ins'), the
        built-ins first; a failing plugin's tools are removed and it is unregistered."""

        def wanted(plugin_name: str) -> bool:
            record = self.records.get(plugin_name)
            if record is None or record.status != "loaded" or record.name in self._tools_ran:
                return False
            if first_party_only and not record.first_party:
                return False
            self._tools_ran.add(record.name)
            return True

        for step in self.hooks.each(
            "register_tools",
            {"registry": self.registry},
            only=only,
            around=self._registering,
            order=self._first_party_first,
            want=wanted,
        ):
            record = self.records.get(step.plugin_name)
            if record is None or record.status != "loaded":
                continue
            if step.error is not None:
                self.pm.unregister(step.plugin)
                self._settle_evictions()
                self._fail(record, "register_tools", step.error, step.plugin)
                continue
            self._settle_evictions()
            record.tools = [e.name for e in self.registry.entries_of(record.name)]
            if self.hooks.trace:
                trace(f"register_tools {record.name} -> registered {record.tools}")
            if step.value:
                self._partial(record, step.value)

    def run_register_toolsets(
        self, define_many: Callable[[dict[str, Any], str], None], only: object = None
    ) -> None:
        """Collect composite toolsets from every plugin; ``define_many(specs, plugin)`` validates and stores.

        A bad definition is recorded on the plugin (its tools stay registered); strict mode raises.
        """
        for step in self.hooks.each("register_toolsets", {}, only=only, order=self._first_party_first):
            record = self.records.get(step.plugin_name)
            if record is None or record.status != "loaded":
                continue
            try:
                if step.error is not None:
                    raise step.error
                if step.value is None:
                    continue
                if not isinstance(step.value, dict):
                    raise TypeError(f"register_toolsets must return a dict, got {type(step.value).__name__}")
                define_many(step.value, record.name)
            except Exception as err:
                record.stage = "register_toolsets"
                record.error = _error_text(err)
                log.error("plugin %r: bad toolset definition: %s", record.name, record.error)
                if self.strict:
                    raise PluginLoadError(f"plugin {record.name!r}: {record.error}") from err

    def check_config(self, sections: Callable[[str], Any], where: str) -> None:
        """Check each ``[plugins.<section>]`` table against the schema its plugin declares
        (``plugin_config_schema``); what is wrong is recorded on the plugin and logged with the fix.

        ``sections(name)`` returns a section as written (secret references unresolved) or None; ``where`` names
        the configuration file for the fix.
        """
        for step in self.hooks.each("plugin_config_schema", {}, order=self._first_party_first):
            from ..schema import schema_problems, value_problems  # only with a plugin that declares a schema

            record = self.records.get(step.plugin_name)
            if record is None or record.status != "loaded":
                continue
            record.config_problems = []
            if step.error is not None or (step.value is not None and not isinstance(step.value, dict)):
                why = _error_text(step.error) if step.error else f"returned {type(step.value).__name__}"
                record.config_problems.append(
                    {"section": "", "path": "", "message": f"plugin_config_schema {why}"}
                )
                continue
            for section, schema in (step.value or {}).items():
                broken = (
                    schema_problems(schema)
                    if isinstance(schema, dict)
                    else ["it is not a JSON Schema object"]
                )
                if broken:
                    message = f"its schema for [plugins.{section}] is invalid: {broken[0]}"
                    record.config_problems.append({"section": section, "path": "", "message": message})
                    continue
                value = sections(section)
                if value is None:
                    continue
                for bad in value_problems(schema, _references_as_text(value)):
                    path = "" if bad.path == "$" else bad.path
                    said = bad.message or f"{path or 'the table'}: expected {bad.expected}, got {bad.got}"
                    message = f"[plugins.{section}] {said}"
                    record.config_problems.append({"section": section, "path": path, "message": message})
            if not record.config_problems:
                continue
            from ._fixes import config_fix  # on failure only: a clean load never needs the advice

            for found in record.config_problems:
                fix = config_fix(found, where)
                log.error("plugin %r: %s; fix: %s", record.name, found["message"], fix)

    def unknown_hooks(self) -> list[tuple[str, str]]:
        """``(plugin, hook)`` for each hook implementation that names no hook of the project (optional ones
        marked ``optionalhook`` are left out)."""
        pm = self.pm
        found = []
        for plugin in pm.get_plugins():
            for caller in pm.get_hookcallers(plugin) or []:
                if caller.spec is not None:
                    continue
                mine = [i for i in caller.get_hookimpls() if i.plugin is plugin]
                if all(getattr(i, "optionalhook", False) for i in mine):
                    continue
                found.append((pm.get_name(plugin) or "?", caller.name))
        return found

    def check_pending(self) -> list[str]:
        """Hook implementations that name no known hook (pluggy's check_pending), as messages."""
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as err:
            return [str(err)]
        return []

    # -- precedence: built-ins own their names (see _precedence) ------------------------------------------

    def first_party_module(self) -> str | None:
        """The module of the hermes-tools distribution's own ``builtin`` entry point."""
        if self._first_party_module is None:
            self._first_party_module = first_party_module() or ""
        return self._first_party_module or None

    def is_first_party_object(self, plugin: object) -> bool:
        """Whether ``plugin`` (a module, or a module name) is the first-party built-ins plugin."""
        name = plugin if isinstance(plugin, str) else getattr(plugin, "__name__", None)
        return isinstance(name, str) and name == self.first_party_module()

    def _claim_precedence(self, record: PluginRecord) -> None:
        if record.first_party:
            self.arbiter.first_party.add(record.name)
        if record.distribution:
            self.arbiter.distributions[record.name] = record.distribution

    def _first_party_first(self, impls: Iterable[Any]) -> list[Any]:
        def rank(impl: Any) -> bool:
            name = self.pm.get_name(impl.plugin)
            record = self.records.get(name) if name else None
            return not (record is not None and record.first_party)

        return sorted(impls, key=rank)

    def _settle_evictions(self) -> None:
        """A third-party plugin that lost a name to a built-in registered after it loses that tool alone."""
        while self.arbiter.evictions:
            eviction = self.arbiter.evictions.pop(0)
            record = self.records.get(eviction.plugin)
            builtin = self.registry.get(eviction.tool)
            if record is None or builtin is None:
                continue
            self._lose(record, eviction.tool, ReservedToolName(eviction.tool, builtin, eviction.plugin))
