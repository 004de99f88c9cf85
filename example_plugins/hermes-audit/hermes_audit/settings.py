"""The ``[plugins.audit]`` section: where the JSONL file and the optional SQLite mirror live."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["AuditSettings", "default_path"]

_KEYS = frozenset({"path", "sqlite", "fsync", "enabled"})


def default_path(data_dir: Path) -> Path:
    """``<data dir>/audit/audit.jsonl``."""
    return data_dir / "audit" / "audit.jsonl"


@dataclass(frozen=True, slots=True)
class AuditSettings:
    """``path`` of the JSONL file, ``sqlite`` mirror path (or None), ``fsync`` after every record."""

    path: Path
    sqlite: Path | None = None
    fsync: bool = False
    enabled: bool = True

    @classmethod
    def from_section(cls, section: Mapping[str, Any], data_dir: Path) -> AuditSettings:
        """Read the section; relative paths are below ``<data dir>/audit``. Raises ``ValueError``."""
        unknown = set(section) - _KEYS
        if unknown:
            raise ValueError(f"[plugins.audit]: unknown key(s) {sorted(unknown)}")
        base = data_dir / "audit"
        raw_path = section.get("path")
        if raw_path is None:
            path = default_path(data_dir)
        elif isinstance(raw_path, str) and raw_path:
            path = base / Path(raw_path).expanduser()
        else:
            raise ValueError("[plugins.audit].path must be a non-empty string")
        raw_sqlite = section.get("sqlite", False)
        sqlite: Path | None
        if raw_sqlite is True:
            sqlite = path.with_suffix(".sqlite3")
        elif raw_sqlite is False:
            sqlite = None
        elif isinstance(raw_sqlite, str) and raw_sqlite:
            sqlite = base / Path(raw_sqlite).expanduser()
        else:
            raise ValueError("[plugins.audit].sqlite must be true, false or a path")
        for key in ("fsync", "enabled"):
            if not isinstance(section.get(key, False), bool):
                raise ValueError(f"[plugins.audit].{key} must be true or false")
        return cls(
            path=path, sqlite=sqlite, fsync=section.get("fsync", False), enabled=section.get("enabled", True)
        )
