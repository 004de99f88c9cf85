"""``hermes plugins list`` and ``hermes plugins doctor``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..plugins import source_label
from ._logs import loading_reported_elsewhere
from ._output import emit_json, emit_table, is_terminal
from ._state import get_state

if TYPE_CHECKING:
    from ..system import ToolSystem

__all__ = ["plugins_group"]


@click.group("plugins")
def plugins_group() -> None:
    """Inspect and diagnose plugins (entry points, drop-in files, the built-ins)."""


def _mcp_rows(system: ToolSystem) -> list[dict[str, Any]]:
    """One row per configured MCP server, shaped like a plugin record."""
    rows = []
    for name, info in sorted(system.mcp_status().items()):
        skipped = info.get("skipped") or {}
        rows.append(
            {
                "name": f"mcp:{name}",
                "source": "mcp",
                "status": info.get("state"),
                "distribution": info.get("server"),
                "version": info.get("version"),
                "module": None,
                "path": None,
                "error": info.get("error"),
                "stage": None,
                "import_ms": 0.0,
                "hooks": [],
                "tools": list(info.get("tools") or []),
                "note": f"{len(skipped)} tools skipped (see hermes plugins doctor)" if skipped else "",
            }
        )
    return rows


@plugins_group.command("list")
@click.option("--all", "show_all", is_flag=True, help="Also blocked plugins and skipped drop-in files.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def list_command(show_all: bool, as_json: bool) -> None:
    """List plugins and MCP servers: name, distribution, version, source, status, hooks and tools.

    Plain columns: name, distribution, version, source, status, hooks, tools, error or note. The drop-in
    folder scanned is named on stderr (in the title on a terminal).
    """
    state = get_state()
    with loading_reported_elsewhere():
        system = state.system()
    rows = []
    for record in system.plugin_records():
        if not show_all and record.status in ("blocked", "skipped"):
            continue
        rows.append({**record.as_dict(), "source": source_label(record.source, record.distribution)})
    rows.extend(_mcp_rows(system))
    if as_json:
        emit_json(rows)
        return
    folder = state.plugins_folder()
    terminal = is_terminal()
    if not terminal:
        click.echo(f"# drop-in folder: {folder}", err=True)
    emit_table(
        ["name", "distribution", "version", "source", "status", "hooks", "tools", "error / note"],
        [
            [
                r["name"],
                r["distribution"],
                r["version"],
                r["source"],
                r["status"],
                r["hooks"],
                len(r["tools"]) if terminal else r["tools"],
                r["error"] or r["note"],
            ]
            for r in rows
        ],
        title=f"{len(rows)} plugins; drop-in folder: {folder}",
    )


@plugins_group.command("doctor")
@click.option(
    "--json", "as_json", is_flag=True, help='Print {"ok": ..., "plugins": [...], "problems": [...]}.'
)
@click.option("--strict", is_flag=True, help="Warnings (hidden tools, missing version ranges) fail too.")
@click.option("--timeout", default=30.0, show_default=True, help="Seconds allowed for each isolated import.")
@click.option("--verbose", is_flag=True, help="List each tool hidden by design (one summary line otherwise).")
def doctor_command(as_json: bool, strict: bool, timeout: float, verbose: bool) -> None:
    """Check every plugin: import (isolated, timed), hooks, schemas, clashes, checks, blocks, versions.

    Exit status 0 when healthy, 1 when any error is found (with --strict, any warning too). Each problem
    comes with a one-line fix. Plain lines: severity, plugin, check, message, fix.
    """
    from ..doctor import run_doctor

    state = get_state()
    with loading_reported_elsewhere():
        system = state.system()
    report = run_doctor(system, timeout=timeout, verbose=verbose or state.verbose)
    failing = {"error", "warning"} if strict else {"error"}
    healthy = not any(p.severity in failing for p in report.problems)
    if as_json:
        emit_json({**report.as_dict(), "ok": healthy})
    elif is_terminal():
        _print_rich(report.plugins, [p.as_dict() for p in report.problems])
    else:
        for p in report.problems:
            click.echo("\t".join([p.severity, p.plugin, p.check, p.message, p.fix]))
    if not as_json:
        errors = sum(p.severity == "error" for p in report.problems)
        warnings = sum(p.severity == "warning" for p in report.problems)
        verdict = "healthy" if healthy else "problems found"
        click.echo(
            f"{len(report.plugins)} plugins checked: {errors} errors, {warnings} warnings: {verdict}",
            err=True,
        )
    if not healthy:
        click.get_current_context().exit(1)


def _print_rich(plugins: list[dict[str, object]], problems: list[dict[str, str]]) -> None:
    emit_table(
        ["plugin", "source", "status", "import ms", "tools", "problems"],
        [
            [
                p["name"],
                p["source"],
                p["status"],
                _ms(p["import_check"]),
                len(p["tools"]) if isinstance(p["tools"], list) else 0,
                p["problems"],
            ]
            for p in plugins
        ],
        title="Plugins",
        rich_output=True,
        prose=(),
    )
    if problems:
        emit_table(
            ["severity", "plugin", "check", "problem", "fix"],
            [[p["severity"], p["plugin"], p["check"], p["message"], p["fix"]] for p in problems],
            title="Problems",
            rich_output=True,
            prose=("problem", "fix"),
        )


def _ms(check: object) -> str:
    if not isinstance(check, dict):
        return ""
    if check.get("skipped"):
        return f"({check['skipped']})"
    ms = check.get("ms")
    return f"{ms:.1f}" if isinstance(ms, float) else ""
