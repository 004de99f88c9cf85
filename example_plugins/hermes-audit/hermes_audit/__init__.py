"""hermes-audit: a tamper-evident record of every tool call, as hash-chained JSONL (optionally SQLite too).

Each finished call (ok, error, blocked or denied) becomes one line with the tool, its plugin, a hash of
the arguments, the decision and status, the error kind, the duration and the result size: never the
arguments, the result or an error text. ``hermes audit verify`` (or ``verify_chain``) checks the chain.

Importing the package is cheap: the writer, hashing and SQLite load on the first recorded call.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, CallOutcome, hookimpl

if TYPE_CHECKING:
    from ._state import writer_for
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
    "writer_for",
]

_LAZY = {
    "AuditSettings": "settings",
    "AuditWriter": "writer",
    "ChainReport": "chain",
    "args_sha256": "record",
    "build_fields": "record",
    "canonical": "chain",
    "record_hash": "chain",
    "sync_sqlite": "sqlite_mirror",
    "verify_chain": "chain",
    "verify_file": "chain",
    "writer_for": "_state",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_audit' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


@hookimpl
def post_tool_call(name: str, arguments: Any, entry: Any, context: CallContext, outcome: CallOutcome) -> None:
    """Append one record for the finished call."""
    from ._state import writer_for
    from .record import build_fields

    writer = writer_for(context)
    if writer is not None:
        writer.append(build_fields(name, arguments, entry, context.session_id, outcome))


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``hermes audit verify`` and ``hermes audit sqlite``."""
    from .cli import audit_group

    cli.add_command(audit_group)
