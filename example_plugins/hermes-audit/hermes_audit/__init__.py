"""hermes-audit: a tamper-evident record of every tool call, as hash-chained JSONL (optionally SQLite too).

Each finished call (ok, error, blocked or denied) becomes one line with the tool, its plugin, a hash of
the arguments, the decision and status, the error kind, the duration and the result size: never the
arguments, the result or an error text. ``hermes audit verify`` (or ``verify_chain``) checks the chain.
"""

from __future__ import annotations

import threading
import weakref
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
    "canonical",
    "post_tool_call",
    "record_hash",
    "register_commands",
    "sync_sqlite",
    "verify_chain",
    "verify_file",
    "writer_for",
]

# One writer per tool system, reopened when its audit section or data dir changes; closed with the system.
_Cached = tuple[AuditSettings, AuditWriter | None]
_writers: weakref.WeakKeyDictionary[Any, _Cached] = weakref.WeakKeyDictionary()
_unbound: dict[str, _Cached] = {}
_lock = threading.Lock()


def _cached(system: Any) -> _Cached | None:
    return _unbound.get("") if system is None else _writers.get(system)


def writer_for(context: CallContext) -> AuditWriter | None:
    """The audit writer of the calling system (None when ``[plugins.audit] enabled = false``)."""
    settings = AuditSettings.from_section(context.plugin_config("audit"), context.data_dir)
    system = context.system
    cached = _cached(system)
    if cached is not None and cached[0] == settings:
        return cached[1]
    with _lock:
        cached = _cached(system)
        if cached is not None and cached[0] == settings:
            return cached[1]
        if cached is not None and cached[1] is not None:
            cached[1].close()
        writer = (
            AuditWriter(settings.path, sqlite=settings.sqlite, fsync=settings.fsync)
            if settings.enabled
            else None
        )
        if system is None:
            _unbound[""] = (settings, writer)
        else:
            _writers[system] = (settings, writer)
            on_close = getattr(system, "on_close", None)
            if writer is not None and on_close is not None:
                on_close(writer.close)
        return writer


@hookimpl
def post_tool_call(name: str, arguments: Any, entry: Any, context: CallContext, outcome: CallOutcome) -> None:
    """Append one record for the finished call."""
    writer = writer_for(context)
    if writer is not None:
        writer.append(build_fields(name, arguments, entry, context.session_id, outcome))


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``hermes audit verify`` and ``hermes audit sqlite``."""
    from .cli import audit_group

    cli.add_command(audit_group)
