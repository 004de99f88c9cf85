"""The plugin doctor: every entry point and drop-in file checked, each problem with a one-line fix.

Checks: an isolated import in a subprocess (error and time), hook implementations against the hook
specs, every tool schema against its metaschema and each provider's rules, each handler's signature against
its schema, tool name clashes, tool checks (missing environment variables, binaries...), blocked and disabled
plugins, unknown toolsets in the configuration, and the ``hermes-tools`` version range a distribution
declares. Each problem is reported once.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..plugins import PluginRecord
    from ..system import ToolSystem

__all__ = ["DoctorReport", "ImportCheck", "Problem", "import_check", "run_doctor"]

SELF_DISTRIBUTION = "hermes-tools"
_MARK = "HERMES-DOCTOR-RESULT:"

# Runs in a fresh interpreter: hermes_core is imported first so only the plugin's own import is timed.
_PROBE = """
import importlib, importlib.util, json, sys, time
import hermes_core
kind, target, attr = sys.argv[1], sys.argv[2], sys.argv[3]
start = time.perf_counter()
try:
    if kind == "file":
        spec = importlib.util.spec_from_file_location("hermes_doctor_probe", target)
        module = importlib.util.module_from_spec(spec)
        sys.modules["hermes_doctor_probe"] = module
        spec.loader.exec_module(module)
    else:
        obj = importlib.import_module(target)
        for part in filter(None, attr.split(".")):
            obj = getattr(obj, part)
    result = {"ok": True, "error": None}
except BaseException as err:
    result = {"ok": False, "error": type(err).__name__ + ": " + str(err)}
result["ms"] = (time.perf_counter() - start) * 1000
sys.stdout.flush()
print("\\n" + MARK + json.dumps(result), flush=True)
""".replace("MARK", repr(_MARK))


@dataclass(slots=True)
class Problem:
    """One finding: ``severity`` is error (unhealthy), warning or info."""

    severity: str
    plugin: str
    check: str
    message: str
    fix: str

    def __post_init__(self) -> None:
        self.message = " ".join(self.message.split())  # one line each, whatever the error text looked like
        self.fix = " ".join(self.fix.split())

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(slots=True)
class ImportCheck:
    """The result of importing a plugin in a fresh interpreter; ``skipped`` says why it was not tried."""

    ok: bool
    ms: float | None = None
    error: str | None = None
    skipped: str = ""


@dataclass(slots=True)
class DoctorReport:
    plugins: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "plugins": self.plugins, "problems": [p.as_dict() for p in self.problems]}


def import_check(record: PluginRecord, timeout: float = 30.0) -> ImportCheck:
    """Import the plugin in a subprocess of this interpreter and time it; never runs for blocked plugins."""
    if record.status == "blocked":
        return ImportCheck(ok=True, skipped="blocked")
    if record.source == "drop-in":
        if record.status == "skipped" or record.path is None:
            return ImportCheck(ok=True, skipped="not a plugin file")
        argv = ["file", record.path, ""]
    elif record.source == "entry point" and record.module:
        module, _, attr = record.module.partition(":")
        argv = ["module", module.strip(), attr.strip()]
    else:
        return ImportCheck(ok=True, skipped="registered in-process")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return ImportCheck(
            ok=False, ms=(time.perf_counter() - started) * 1000, error=f"import took over {timeout:g} s"
        )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(_MARK):
            data = json.loads(line[len(_MARK) :])
            return ImportCheck(ok=bool(data["ok"]), ms=float(data["ms"]), error=data["error"])
    tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return ImportCheck(ok=False, error=f"the import ended the interpreter: {tail}")


def _import_fix(record: PluginRecord, error: str) -> str:
    if error.startswith(("ModuleNotFoundError", "ImportError")) and "'" in error:
        missing = error.split("'")[1].split(".")[0]
        return f"install the missing module '{missing}' (pip install ...) or block the plugin: -p no:{record.name}"
    if error.startswith("SyntaxError"):
        return f"fix the syntax error in {record.path or record.module}"
    return f"fix the error raised while importing {record.path or record.module}, or block it: -p no:{record.name}"


_RESERVED = re.compile(r"tool '([^']+)' clashes with the built-in tool")


def _reserved_fix(record: PluginRecord, tool: str) -> str:
    """The fix for a plugin refused because it registers a built-in's name: it names that plugin, never the
    built-ins."""
    where = record.path or record.distribution or record.module or record.name
    short = record.name.removeprefix("dropin:")
    return (
        f"rename the tool {tool!r} in plugin {record.name!r} ({where}) or block that plugin: -p no:{short}; "
        f'to replace the built-in on purpose add [tools] override = {{{tool} = "{short}"}} to the config'
    )


def _override_problems(system: ToolSystem) -> list[Problem]:
    """``[tools] override`` entries that replace nothing: the named plugin does not provide that tool."""
    from ..plugins import plugin_matches

    out = []
    for tool, wanted in sorted(system.config.tool_overrides.items()):
        entry = system.registry.get(tool)
        holder = entry.plugin if entry is not None else None
        if entry is not None and plugin_matches(wanted, holder, entry.distribution):
            continue
        now = f"the tool comes from {holder!r}" if entry is not None else "no plugin registers it"
        out.append(
            Problem(
                "warning",
                "config",
                "override",
                f"[tools] override names {wanted!r} for {tool!r}, but {now}",
                f"install or unblock the plugin {wanted!r}, or remove {tool} from [tools] override",
            )
        )
    return out


def _failure_problems(record: PluginRecord, probe: ImportCheck) -> list[Problem]:
    """Problems from a plugin that failed to load, classified by stage and error."""
    if record.error is None or record.status in ("blocked", "skipped"):
        return []
    error = record.error
    name = record.name
    reserved = _RESERVED.search(error)
    if reserved:
        return [Problem("error", name, "clash", error, _reserved_fix(record, reserved.group(1)))]
    if "clashes with" in error or "ToolNameConflict" in error or "ToolAlreadyRegistered" in error:
        return [
            Problem(
                "error",
                name,
                "clash",
                error,
                f"rename the tool, or block one of the two plugins: -p no:{name}",
            )
        ]
    if "InvalidSchemaError" in error:
        return [
            Problem(
                "error",
                name,
                "schema",
                error,
                "fix the tool's schema (see `hermes tools show` of a working tool)",
            )
        ]
    stage = record.stage or "import"
    if stage in ("import", "scan"):
        detail = probe.error if probe.error else error
        return [Problem("error", name, "import", f"does not import: {detail}", _import_fix(record, detail))]
    if stage == "register":
        if error.startswith("duplicate plugin name"):
            return [
                Problem(
                    "error", name, "hooks", error, "rename one of the plugins (entry point name or file name)"
                )
            ]
        wrapper = "hook wrapper" in error
        return [
            Problem(
                "error",
                name,
                "hooks",
                f"hook implementation rejected: {error}",
                "make it a plain @hookimpl (wrappers are for pre_tool_call, post_tool_call and "
                "transform_tool_result; see hookspecs.md)"
                if wrapper
                else "make each @hookimpl function's name and arguments match a hook in hookspecs.md",
            )
        ]
    if stage == "register_toolsets":
        return [
            Problem(
                "error",
                name,
                "toolsets",
                f"register_toolsets failed: {error}",
                "fix the toolset definitions it returns",
            )
        ]
    return [
        Problem(
            "error",
            name,
            stage,
            f"{stage} failed: {error}",
            f"fix the plugin's {stage} hook, or block it: -p no:{name}",
        )
    ]


def _unit_fix(record: PluginRecord, unit: str, error: str) -> str:
    """The fix for one part of a plugin that failed alone (the rest of the plugin loaded)."""
    if error.startswith(("ModuleNotFoundError", "ImportError")) and "'" in error:
        missing = error.split("'")[1]
        if not missing.startswith(unit.split(".")[0]):
            return f"install the missing module '{missing.split('.')[0]}' (pip install ...) to get {unit}'s tools"
    reinstall = (
        f"pip install --force-reinstall {record.distribution}" if record.distribution else "reinstall it"
    )
    if error.startswith("SyntaxError"):
        return f"fix the syntax error in {unit} ({reinstall} if you did not change it)"
    return f"fix the error raised while loading {unit} ({reinstall} if you did not change it)"


def _unit_problems(record: PluginRecord) -> list[Problem]:
    """One error per part of a loaded plugin that failed alone: its tools are missing, the others are there."""
    return [
        Problem(
            "error",
            record.name,
            "import",
            f"{unit} failed to load, so its tools are missing (the plugin's other tools loaded): {error}",
            _unit_fix(record, unit, error),
        )
        for unit, error in sorted(record.failed_units.items())
    ]


def _hook_problems(system: ToolSystem) -> list[Problem]:
    """Hook implementations that name no hook (pluggy's check_pending), attributed to their plugin."""
    pm = system.plugins.pm
    known = sorted(n for n, caller in vars(pm.hook).items() if getattr(caller, "spec", None) is not None)
    found: list[Problem] = []
    for plugin, hook in system.plugins.unknown_hooks():
        close = difflib.get_close_matches(hook, known, n=1)
        hint = f"rename it to {close[0]!r}" if close else f"use one of: {', '.join(known)}"
        found.append(Problem("error", plugin, "hooks", f"implements unknown hook {hook!r}", hint))
    if not found:
        for message in system.plugins.check_pending():
            found.append(
                Problem(
                    "error", "?", "hooks", message, "rename the @hookimpl function to a hook in hookspecs.md"
                )
            )
    return found


def _schema_problems(system: ToolSystem) -> list[Problem]:
    from ..schema import provider_problems, schema_problems

    out: list[Problem] = []
    for entry in system.registry.entries():
        plugin = entry.plugin or "?"
        for message in schema_problems(entry.parameters):
            out.append(
                Problem(
                    "error",
                    plugin,
                    "schema",
                    f"tool {entry.name!r}: invalid JSON Schema: {message}",
                    "fix the parameters schema so it validates against its metaschema",
                )
            )
        for fmt, messages in provider_problems(entry.schema).items():
            for message in messages:
                out.append(
                    Problem(
                        "error",
                        plugin,
                        "provider",
                        f"tool {entry.name!r} is refused by {fmt}: {message}",
                        f"change the schema so {fmt} accepts it",
                    )
                )
    return out


def _check_fix(reason: str) -> str:
    if reason.startswith("missing environment variable"):
        names = reason.split(" ", 3)[-1]
        return f"set {names} in the environment (or leave the tool hidden)"
    if "timed out" in reason:
        return (
            "make the tool's check fast (it runs on every definitions refresh) or raise tools.check_timeout"
        )
    return "install what the tool's check needs (binary, service or credentials), or leave the tool hidden"


def _check_problems(system: ToolSystem) -> list[Problem]:
    hidden = system.hidden(enabled=["all"], disabled=[], disabled_tools=[])
    by_design = system.availability.by_design
    out = []
    for name, reason in sorted(hidden.items()):
        entry = system.registry.get(name)
        plugin = (entry.plugin if entry is not None else None) or "?"
        if name in by_design:  # hidden on purpose in this setting: worth knowing, not a problem
            out.append(
                Problem(
                    "info",
                    plugin,
                    "check",
                    f"tool {name!r} is hidden here by design: {reason}",
                    "nothing to do",
                )
            )
            continue
        fix = system.availability.fixes.get(name) or _check_fix(reason)
        out.append(Problem("warning", plugin, "check", f"tool {name!r} is hidden: {reason}", fix))
    return out


def _signature_problems(system: ToolSystem) -> list[Problem]:
    """Handlers whose signature disagrees with their schema: the call would fail with a TypeError."""
    from .._signatures import signature_problems

    out = []
    for entry in system.registry.entries():
        for message in signature_problems(entry.handler, entry.parameters, entry.handler_style):
            out.append(
                Problem(
                    "error",
                    entry.plugin or "?",
                    "signature",
                    f"tool {entry.name!r}: {message}",
                    "make the handler's parameters match the schema's properties (or register a "
                    "handler(args: dict, **kw) handler with handler_style='dict')",
                )
            )
    return out


def _disabled_problems(system: ToolSystem) -> list[Problem]:
    everything = system.available(enabled=["all"], disabled=[], disabled_tools=[])
    everything = everything | set(system.hidden(enabled=["all"], disabled=[], disabled_tools=[]))
    try:
        selected = system.available() | set(system.hidden())
    except ValueError:  # the configuration names an unknown toolset: reported with the toolset problems
        return []
    by_plugin: dict[str, list[str]] = {}
    for name in sorted(everything - selected):
        entry = system.registry.get(name)
        by_plugin.setdefault((entry.plugin if entry is not None else None) or "?", []).append(name)
    return [
        Problem(
            "info",
            plugin,
            "disabled",
            f"tools not selected by the configuration: {', '.join(names)}",
            "edit toolsets.enabled/disabled or tools.disabled in the config to select them",
        )
        for plugin, names in sorted(by_plugin.items())
    ]


def _version_problems(record: PluginRecord, version: str) -> list[Problem]:
    """Check the ``hermes-tools`` requirement a plugin's distribution declares against this version."""
    if record.source != "entry point" or not record.distribution or record.distribution == SELF_DISTRIBUTION:
        return []
    import importlib_metadata
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        requires = importlib_metadata.requires(record.distribution) or []
    except importlib_metadata.PackageNotFoundError:
        return []
    declared = False
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != SELF_DISTRIBUTION:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        declared = True
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            return [
                Problem(
                    "error",
                    record.name,
                    "version",
                    f"{record.distribution} requires hermes-tools{req.specifier}, this is {version}",
                    f"pip install a version of {record.distribution} made for hermes-tools {version}",
                )
            ]
    if not declared:
        return [
            Problem(
                "warning",
                record.name,
                "version",
                f"{record.distribution} declares no hermes-tools version range",
                "add 'hermes-tools>=X,<Y' to the plugin's dependencies",
            )
        ]
    return []


def _toolset_problems(system: ToolSystem) -> list[Problem]:
    out = [
        Problem("error", "config", "toolsets", message, "fix [toolsets.custom] in the configuration file")
        for message in system.toolset_errors
    ]
    config = system.config
    for key, names, severity in (
        ("toolsets.enabled", config.enabled_toolsets or [], "error"),
        ("toolsets.disabled", config.disabled_toolsets, "warning"),
        ("tools.disabled", config.disabled_tools, "warning"),
    ):
        for unknown in system.toolsets.unknown(names):
            effect = "every command fails" if severity == "error" else "it is ignored"
            out.append(
                Problem(
                    severity,
                    "config",
                    "toolsets",
                    f"{key} names {unknown}, which is neither a toolset nor a tool: {effect}",
                    f"remove it from {key}, or install the plugin that provides it",
                )
            )
    composites = system.toolsets.composites()
    for message in system.toolsets.problems():
        owner = next((c.plugin for n, c in composites.items() if repr(n) in message), None) or "config"
        out.append(
            Problem(
                "warning",
                owner,
                "toolsets",
                message,
                "remove the names or install the plugin that provides them",
            )
        )
    return out


def _mcp_problems(system: ToolSystem) -> list[Problem]:
    """Configured MCP servers that are down or misconfigured, and tool names that clash (see ``_mcp``)."""
    from ._mcp import mcp_problems

    return mcp_problems(system)


def _sandbox_problems(system: ToolSystem) -> list[Problem]:
    """Which sandbox runs commands and why; no sandbox at all is an error, an explicit "none" a warning."""
    from ..sandbox._diagnose import diagnose

    return [
        Problem(d.severity, "sandbox", "sandbox", d.message, d.fix)
        for d in diagnose(system.config, system.workspace)
    ]


def _environment_problems(system: ToolSystem) -> list[Problem]:
    """Whether the session environment can start (else the fix), and plugin kinds registered wrongly."""
    from ..environments._diagnose import diagnose

    return [Problem(f.severity, "environment", "environment", f.message, f.fix) for f in diagnose(system)]


def _unique(problems: list[Problem]) -> list[Problem]:
    """Each problem once: the same finding reached by two checks (a plugin's load error and its isolated
    import, a clash seen from both plugins) is reported by the first."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for problem in problems:
        key = (problem.severity, problem.plugin, problem.message)
        if key not in seen:
            seen.add(key)
            out.append(problem)
    return out


def run_doctor(system: ToolSystem, *, timeout: float = 30.0) -> DoctorReport:
    """Check every plugin the system saw and return the plugins with their problems."""
    from .. import __version__
    from ._tools import source_label

    records = system.plugin_records()
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(records)))) as pool:
        probes = list(pool.map(lambda r: import_check(r, timeout), records))
    report = DoctorReport()
    for record, probe in zip(records, probes, strict=True):
        problems = _failure_problems(record, probe)
        if record.status == "loaded" and not probe.ok and probe.error:
            problems.append(
                Problem(
                    "error",
                    record.name,
                    "import",
                    f"does not import on its own: {probe.error}",
                    _import_fix(record, probe.error),
                )
            )
        if record.status == "blocked":
            problems.append(
                Problem(
                    "info",
                    record.name,
                    "blocked",
                    f"blocked: {record.note or 'by configuration'}",
                    "remove it from plugins.blocked, HERMES_BLOCK_PLUGINS or -p no:NAME to load it",
                )
            )
        elif record.status == "skipped":
            problems.append(
                Problem(
                    "error" if record.error else "warning",
                    record.name,
                    "import",
                    f"never imported: {record.note}",
                    "register tools with registry.register(...) (from hermes_core import registry) or define "
                    "@hookimpl functions; prefix a helper file's name with _ so the folder scan ignores it",
                )
            )
        elif (
            record.status == "loaded" and record.source == "drop-in" and not record.tools and not record.hooks
        ):
            problems.append(
                Problem(
                    "warning",
                    record.name,
                    "import",
                    record.note or "imported, but it registered no tool and implements no hook",
                    "make sure registry.register(...) runs when the file is imported (call the function that "
                    "registers at top level, check the conditions around it)",
                )
            )
        problems.extend(_unit_problems(record))
        problems.extend(_version_problems(record, __version__))
        report.problems.extend(problems)
        report.plugins.append(
            {
                **record.as_dict(),
                "source": source_label(record.source, record.distribution),
                "import_check": asdict(probe),
            }
        )
    report.problems.extend(_hook_problems(system))
    report.problems.extend(_schema_problems(system))
    report.problems.extend(_signature_problems(system))
    report.problems.extend(_check_problems(system))
    report.problems.extend(_toolset_problems(system))
    report.problems.extend(_disabled_problems(system))
    report.problems.extend(_mcp_problems(system))
    report.problems.extend(_override_problems(system))
    report.problems.extend(_sandbox_problems(system))
    report.problems.extend(_environment_problems(system))
    report.problems = _unique(report.problems)
    for row in report.plugins:
        row["problems"] = sum(1 for p in report.problems if p.plugin == row["name"] and p.severity != "info")
    return report
