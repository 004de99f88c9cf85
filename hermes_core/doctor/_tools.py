"""The doctor's tool checks: schemas, handler signatures, checks that hide tools, and what the config leaves out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._report import Problem

if TYPE_CHECKING:
    from ..system import ToolSystem

__all__ = ["check_problems", "disabled_problems", "schema_problems", "signature_problems"]

_EVERYTHING = {"enabled": ["all"], "disabled": [], "disabled_tools": []}


def schema_problems(system: ToolSystem) -> list[Problem]:
    """Parameter schemas that break their metaschema, and tools a provider would refuse."""
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


def signature_problems(system: ToolSystem) -> list[Problem]:
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


def check_fix(reason: str) -> str:
    """The fix for a tool its check hides, by the reason the check gave."""
    if reason.startswith("missing environment variable"):
        names = reason.split(" ", 3)[-1]
        return f"set {names} in the environment (or leave the tool hidden)"
    if "timed out" in reason:
        return (
            "make the tool's check fast (it runs on every definitions refresh) or raise tools.check_timeout"
        )
    return "install what the tool's check needs (binary, service or credentials), or leave the tool hidden"


def check_problems(system: ToolSystem, verbose: bool = False) -> list[Problem]:
    """Tools hidden by their check: a warning with the fix each; the tools hidden by design (nothing to do) as one
    note, or one note each when ``verbose``."""
    hidden = system.hidden(**_EVERYTHING)
    by_design = system.availability.by_design
    out = []
    designed: dict[str, str] = {}
    for name, reason in sorted(hidden.items()):
        entry = system.registry.get(name)
        plugin = (entry.plugin if entry is not None else None) or "?"
        if name in by_design:  # hidden on purpose in this setting: worth knowing, not a problem
            designed[name] = plugin
            if verbose:
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
        fix = system.availability.fixes.get(name) or check_fix(reason)
        out.append(Problem("warning", plugin, "check", f"tool {name!r} is hidden: {reason}", fix))
    if designed and not verbose:
        plugins = sorted(set(designed.values()))
        shown = ", ".join(sorted(designed)[:4]) + (
            f" and {len(designed) - 4} more" if len(designed) > 4 else ""
        )
        out.append(
            Problem(
                "info",
                plugins[0] if len(plugins) == 1 else "tools",
                "check",
                f"{len(designed)} tools are hidden here by design, as this setting has no use for them: {shown}",
                "nothing to do (hermes plugins doctor --verbose lists each with its reason)",
            )
        )
    return out


def disabled_problems(system: ToolSystem) -> list[Problem]:
    """Tools the configuration does not select, one note per plugin."""
    everything = system.available(**_EVERYTHING)
    everything = everything | set(system.hidden(**_EVERYTHING))
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
