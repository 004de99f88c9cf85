"""``hermes audit verify`` and ``hermes audit sqlite``: check the chain, refresh the SQLite mirror."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from hermes_core import CallContext

from .chain import verify_file
from .settings import AuditSettings
from .sqlite_mirror import sync_sqlite

__all__ = ["audit_group"]


def _settings() -> AuditSettings:
    """The audit settings of this ``hermes`` invocation (its ``--config``), without loading any plugin."""
    section: dict[str, Any] = {}
    try:
        from hermes_core.cli import get_state
    except ImportError:  # an older hermes-tools without plugin access to the CLI state
        pass
    else:
        section = get_state().load_config().plugin_section("audit")
    try:
        return AuditSettings.from_section(section, CallContext().data_dir)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


@click.group("audit")
def audit_group() -> None:
    """The tamper-evident audit trail of tool calls (hermes-audit)."""


@audit_group.command("verify")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--anchor", metavar="HASH", help="A hash noted earlier that must still be in the chain.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify_command(path: Path | None, anchor: str | None, as_json: bool) -> None:
    """Verify the hash chain of PATH (default: the configured audit file). Exit 1 on any problem."""
    target = path if path is not None else _settings().path
    report = verify_file(target, anchor=anchor)
    if as_json:
        import json

        data: dict[str, Any] = {
            "path": str(target),
            "ok": report.ok,
            "records": report.records,
            "head": report.head,
            "problems": report.problems,
        }
        click.echo(json.dumps(data, indent=2))
    else:
        for problem in report.problems:
            click.echo(f"{target}: {problem}", err=True)
        verdict = "OK" if report.ok else f"TAMPERED ({len(report.problems)} problem(s))"
        click.echo(f"{target}: {verdict}: {report.records} records, head {report.head}")
    if not report.ok:
        raise SystemExit(1)


@audit_group.command("sqlite")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), help="Default: the configured mirror.")
def sqlite_command(path: Path | None, db: Path | None) -> None:
    """Copy into the SQLite mirror every record of PATH (default: the configured audit file) that it lacks."""
    settings = _settings()
    source = path if path is not None else settings.path
    if not source.exists():
        raise click.ClickException(f"{source}: no such file")
    if db is not None:
        target = db
    elif path is None and settings.sqlite is not None:
        target = settings.sqlite
    else:
        target = source.with_suffix(".sqlite3")
    added = sync_sqlite(source, target)
    click.echo(f"{target}: {added} record(s) added")
