"""hermes-audit: a tamper-evident record of every tool call, as hash-chained JSONL (optionally SQLite too).

Each finished call (ok, error, blocked or denied) becomes one line with the tool, its plugin, a hash of
the arguments, the decision and status, the error kind, the duration and the result size: never the
arguments, the result or an error text. ``hermes audit verify`` (or ``verify_chain``) checks the chain.

Importing the package is cheap (the standard library's json, hashlib and os; SQLite and the CLI load when
used).
"""

from __future__ import annotations

from typing import Any

from hermes_core import CallContext, CallOutcome, hookimpl

from .chain import ChainReport, canonical, record_hash, verify_chain, verify_file
from .record import args_sha256, build_fields
from .settings import AuditSettings
from .sqlite_mirror import sync_sqlite
from .writer import AuditWriter

__version__ = "0.1.0"

__all__ = [
    "AuditSettings",
    "AuditWriter",
    "ChainReport",
    "args_sha256",
    "build_fields",
    "canonical",
    "post_tool_call",
    "record_hash",
    "register_commands",
    "sync_sqlite",
    "verify_chain",
    "verify_file",
]


def _open_writer(context: CallContext) -> AuditWriter | None:
    """The writer ``[plugins.audit]`` asks for, or None when it says ``enabled = false`` (ValueError when it
    is malformed)."""
    settings = AuditSettings.from_section(context.plugin_config("audit"), context.data_dir)
    if not settings.enabled:
        return None
    return AuditWriter(settings.path, sqlite=settings.sqlite, fsync=settings.fsync)


@hookimpl
def post_tool_call(name: str, arguments: Any, entry: Any, context: CallContext, outcome: CallOutcome) -> None:
    """Append one record for the finished call."""
    # one writer per tool system, opened on its first call and closed with the system
    writer = context.stash("audit.writer", lambda: _open_writer(context))
    if writer is not None:
        writer.append(build_fields(name, arguments, entry, context.session_id, outcome))


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``hermes audit verify`` and ``hermes audit sqlite``."""
    from .cli import audit_group

    cli.add_command(audit_group)
