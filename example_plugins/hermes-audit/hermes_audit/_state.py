"""The writer of each tool system: opened on its first call, reopened when its settings change."""

from __future__ import annotations

import threading
import weakref
from pathlib import Path
from typing import Any

from hermes_core import CallContext

from .settings import AuditSettings
from .writer import AuditWriter

__all__ = ["writer_for"]

# One writer per tool system, reopened when its audit section or data dir changes; closed with the system.
# The cache key is the raw section and data dir, so the common case parses nothing.
_Key = tuple[dict[str, Any], Path]
_Cached = tuple[_Key, AuditWriter | None]
_writers: weakref.WeakKeyDictionary[Any, _Cached] = weakref.WeakKeyDictionary()
_unbound: dict[str, _Cached] = {}
_lock = threading.Lock()


def _cached(system: Any) -> _Cached | None:
    return _unbound.get("") if system is None else _writers.get(system)


def writer_for(context: CallContext) -> AuditWriter | None:
    """The audit writer of the calling system (None when ``[plugins.audit] enabled = false``).

    Raises ``ValueError`` for a malformed ``[plugins.audit]`` section.
    """
    key = (context.plugin_config("audit"), context.data_dir)
    system = context.system
    cached = _cached(system)
    if cached is not None and cached[0] == key:
        return cached[1]
    with _lock:
        cached = _cached(system)
        if cached is not None and cached[0] == key:
            return cached[1]
        settings = AuditSettings.from_section(*key)
        if cached is not None and cached[1] is not None:
            cached[1].close()
        writer = (
            AuditWriter(settings.path, sqlite=settings.sqlite, fsync=settings.fsync)
            if settings.enabled
            else None
        )
        if system is None:
            _unbound[""] = (key, writer)
        else:
            _writers[system] = (key, writer)
            on_close = getattr(system, "on_close", None)
            if writer is not None and on_close is not None:
                on_close(writer.close)
        return writer
