"""The doctor's plugin checks: how each plugin loaded, its hook implementations and its hermes-tools version."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from ..plugins._fixes import config_fix, failure_advice, import_fix, refusal_advice, short_name, unmarked_fix
from ..plugins._policy import POLICY_HOOKS
from ._report import Problem

if TYPE_CHECKING:
    from ..plugins import PluginRecord
    from ..system import ToolSystem
    from ._imports import ImportCheck

__all__ = ["hook_problems", "record_problems", "version_problems"]

SELF_DISTRIBUTION = "hermes-tools"


def record_problems(
    record: PluginRecord, probe: ImportCheck, config_file: str = "the configuration file"
) -> list[Problem]:
    """What went wrong with one plugin: its load failure, an import that only works in-process, a block, a
    drop-in file that was skipped or registered nothing."""
    out: list[Problem] = []
    advice = failure_advice(record, probe.error)
    if advice is not None:
        out.append(Problem("error", record.name, advice.check, advice.message, advice.fix))
        out.extend(_policy_problems(record, advice.fix))
    for tool, error in sorted(record.refused.items()):
        lost = refusal_advice(record, error)
        out.append(
            Problem("error", record.name, lost.check, f"lost its tool {tool!r}: {lost.message}", lost.fix)
        )
    out.extend(_unit_problems(record))
    for problem in record.config_problems:
        out.append(
            Problem("error", record.name, "config", problem["message"], config_fix(problem, config_file))
        )
    for name in record.unmarked:
        out.append(
            Problem(
                "error",
                record.name,
                "hooks",
                f"defines {name} without @hookimpl, so it never runs"
                + (" and registers no tool" if name == "register_tools" else ""),
                unmarked_fix(name),
            )
        )
    if record.status == "loaded" and not probe.ok and probe.error:
        out.append(
            Problem(
                "error",
                record.name,
                "import",
                f"does not import on its own: {probe.error}",
                import_fix(record, probe.error),
            )
        )
    if record.status == "blocked":
        out.append(
            Problem(
                "info",
                record.name,
                "blocked",
                f"blocked: {record.note or 'by configuration'}",
                "remove it from plugins.blocked, HERMES_BLOCK_PLUGINS or -p no:NAME to load it",
            )
        )
    elif record.status == "skipped":
        out.append(
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
        record.status == "loaded"
        and record.source == "drop-in"
        and not (record.tools or record.hooks or record.refused or record.unmarked)
    ):
        out.append(
            Problem(
                "warning",
                record.name,
                "import",
                record.note or "imported, but it registered no tool and implements no hook",
                "make sure registry.register(...) runs when the file is imported (call the function that "
                "registers at top level, check the conditions around it)",
            )
        )
    return out


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


def _policy_problems(record: PluginRecord, fix: str) -> list[Problem]:
    """A failed plugin whose policy hooks are gone: what happens to calls now, as the config decides."""
    lost = sorted(POLICY_HOOKS & set(record.hooks))
    name = short_name(record.name)
    if record.on_failure == "refuse":
        what = ", ".join(lost) + " hook" if lost else "hooks"
        return [
            Problem(
                "error",
                record.name,
                "policy",
                f"the plugin failed, so its {what} cannot run: every tool call is refused until it loads "
                '([plugins] on_failure = "refuse")',
                f'{fix}; or run calls without it: [plugins] on_failure = {{{name} = "continue"}}',
            )
        ]
    if lost:
        return [
            Problem(
                "error",
                record.name,
                "policy",
                f"the plugin failed, so its {', '.join(lost)} hook does not run: tool calls run WITHOUT its policy "
                '([plugins] on_failure = "continue")',
                f'{fix}; or refuse calls until it loads: [plugins] on_failure = {{{name} = "refuse"}}',
            )
        ]
    return []


def hook_problems(system: ToolSystem) -> list[Problem]:
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


def version_problems(record: PluginRecord, version: str) -> list[Problem]:
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
