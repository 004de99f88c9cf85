"""What to do about a plugin that failed: one classification and one fix text, shared by the log line that
reports the failure on stderr and by ``hermes plugins doctor``, so both always give the same advice."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ._manager import PluginRecord

__all__ = [
    "Advice",
    "clash_fix",
    "config_fix",
    "failure_advice",
    "import_fix",
    "refusal_advice",
    "short_name",
]

_RESERVED = re.compile(r"tool '([^']+)' clashes with the built-in tool")
_CLASH = re.compile(r"tool '([^']+)' (?:from toolset '[^']*' )?clashes with")


class Advice(NamedTuple):
    """A failure, classified: the doctor's ``check`` name, the one-line message and the fix."""

    check: str
    message: str
    fix: str


def short_name(plugin: str) -> str:
    """The name a user writes for a plugin in ``-p no:NAME`` or the config (a drop-in file's stem)."""
    return plugin.removeprefix("dropin:")


def _where(record: PluginRecord) -> str:
    return record.path or record.distribution or record.module or record.name


def import_fix(record: PluginRecord, error: str) -> str:
    """The fix for a plugin that does not import."""
    if error.startswith(("ModuleNotFoundError", "ImportError")) and "'" in error:
        missing = error.split("'")[1].split(".")[0]
        return (
            f"install the missing module '{missing}' (pip install ...) or block the plugin: "
            f"-p no:{short_name(record.name)}"
        )
    if error.startswith("SyntaxError"):
        return f"fix the syntax error in {record.path or record.module}"
    return (
        f"fix the error raised while importing {record.path or record.module}, or block it: "
        f"-p no:{short_name(record.name)}"
    )


def clash_fix(record: PluginRecord, tool: str, *, builtin: bool) -> str:
    """The fix for a tool of ``record``'s plugin that lost its name to another plugin (a built-in or not)."""
    short = short_name(record.name)
    if builtin:
        return (
            f"rename the tool {tool!r} in plugin {record.name!r} ({_where(record)}) or block that plugin: "
            f'-p no:{short}; to replace the built-in on purpose add [tools] override = {{{tool} = "{short}"}} '
            "to the config"
        )
    return (
        f"rename the tool {tool!r} in one of the two plugins, block one: -p no:{short}, or choose the winner "
        f'with [tools] override = {{{tool} = "{short}"}} in the config'
    )


def unmarked_fix(hook: str) -> str:
    """The fix for a function named after a hook but missing ``@hookimpl``."""
    return f"decorate {hook} with @hookimpl (from hermes_core import hookimpl)"


def config_fix(problem: dict[str, str], where: str) -> str:
    """The fix for a ``[plugins.<section>]`` value of the wrong shape (``PluginRecord.config_problems``)."""
    if not problem.get("section"):
        return "fix the plugin's plugin_config_schema hook (it must return {section: JSON Schema})"
    key = f"plugins.{problem['section']}" + (f".{problem['path']}" if problem.get("path") else "")
    if not problem.get("path") or "[" in problem["path"]:
        return f"correct [plugins.{problem['section']}] in {where} (see the plugin's README)"
    return f"correct {key} in {where}, or run: hermes config set {key} VALUE"


def refusal_advice(record: PluginRecord, error: str) -> Advice:
    """A tool of ``record`` refused at registration (a name clash or an invalid schema); the message is the
    error without the advice it carries for code (the fix says what a user can do)."""
    message = re.split(r"\. Rename |; rename |; pass replace=True", error, maxsplit=1)[0]
    reserved = _RESERVED.search(error)
    if reserved:
        return Advice("clash", message, clash_fix(record, reserved.group(1), builtin=True))
    clash = _CLASH.search(error)
    if clash or "clashes with" in error or "already registered" in error:
        tool = clash.group(1) if clash else "?"
        return Advice("clash", message, clash_fix(record, tool, builtin=False))
    return Advice("schema", message, "fix the tool's schema (see `hermes tools show` of a working tool)")


def failure_advice(record: PluginRecord, detail: str | None = None) -> Advice | None:
    """Why ``record``'s plugin failed and what to do; None when it did not fail. ``detail`` is a better error
    text for an import failure (the isolated import's), when there is one."""
    if record.error is None or record.status in ("blocked", "skipped"):
        return None
    error = record.error
    if _RESERVED.search(error) or "ToolNameConflict" in error or "ToolAlreadyRegistered" in error:
        return refusal_advice(record, error)
    if "clashes with" in error or "InvalidSchemaError" in error:
        return refusal_advice(record, error)
    stage = record.stage or "import"
    name = short_name(record.name)
    if stage in ("import", "scan"):
        text = detail or error
        return Advice("import", f"does not import: {text}", import_fix(record, text))
    if stage == "register":
        if error.startswith("duplicate plugin name"):
            return Advice("hooks", error, "rename one of the plugins (entry point name or file name)")
        if "hook wrapper" in error:
            return Advice(
                "hooks",
                f"hook implementation rejected: {error}",
                "make it a plain @hookimpl (wrappers are for pre_tool_call, post_tool_call and "
                "transform_tool_result; see hookspecs.md)",
            )
        return Advice(
            "hooks",
            f"hook implementation rejected: {error}",
            "make each @hookimpl function's name and arguments match a hook in hookspecs.md",
        )
    if stage == "register_toolsets":
        return Advice(
            "toolsets", f"register_toolsets failed: {error}", "fix the toolset definitions it returns"
        )
    return Advice(
        stage, f"{stage} failed: {error}", f"fix the plugin's {stage} hook, or block it: -p no:{name}"
    )
