"""The doctor's checks of the setup around the plugins: toolsets and overrides in the config, the sandbox."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._report import Problem

if TYPE_CHECKING:
    from ..system import ToolSystem

__all__ = ["environment_problems", "override_problems", "sandbox_problems", "toolset_problems"]


def toolset_problems(system: ToolSystem) -> list[Problem]:
    """Broken ``[toolsets.custom]`` entries, selections naming nothing, composites naming missing tools."""
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


def override_problems(system: ToolSystem) -> list[Problem]:
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


def sandbox_problems(system: ToolSystem) -> list[Problem]:
    """Which sandbox runs commands and why; no sandbox at all is an error, an explicit "none" a warning."""
    from ..sandbox._diagnose import diagnose

    return [
        Problem(d.severity, "sandbox", "sandbox", d.message, d.fix)
        for d in diagnose(system.config, system.workspace)
    ]


def environment_problems(system: ToolSystem) -> list[Problem]:
    """Whether the session environment can start (else the fix), and plugin kinds registered wrongly."""
    from ..environments._diagnose import diagnose

    return [Problem(f.severity, "environment", "environment", f.message, f.fix) for f in diagnose(system)]
