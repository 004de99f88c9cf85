"""``AuditWriter``: appends hash-chained records to a JSONL file, safely across threads and processes.

Every append takes a thread lock and an exclusive ``flock`` on the file (POSIX), reads the chain head (the
last record's ``seq`` and ``hash``) unless nobody else wrote since this writer's last append, and writes the
new line with one ``O_APPEND`` write. The optional SQLite mirror gets the same record right after.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .chain import GENESIS, canonical, record_hash
from .sqlite_mirror import SqliteMirror

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: only the thread lock applies
    fcntl = None  # type: ignore[assignment]

__all__ = ["AuditWriter", "read_head"]

log = logging.getLogger("hermes.audit")

_TAIL_CHUNK = 16_384


def read_head(fd: int, size: int) -> tuple[int, str]:
    """The ``(seq, hash)`` of the last complete, well-formed record in the first ``size`` bytes of ``fd``."""
    end = size
    chunk = _TAIL_CHUNK
    while end > 0:
        start = max(0, end - chunk)
        data = os.pread(fd, end - start, start)
        lines = data.split(b"\n")
        # lines[0] may be cut (unless we read from the start); the text after the last newline is incomplete
        complete = lines[1:-1] if start > 0 else lines[:-1]
        for raw in reversed(complete):
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if (
                isinstance(record, dict)
                and isinstance(record.get("seq"), int)
                and isinstance(record.get("hash"), str)
            ):
                return int(record["seq"]), str(record["hash"])
        if start == 0:
            break
        first_newline_end = start + len(lines[0]) + 1
        if first_newline_end >= end:
            chunk *= 2  # a line longer than the window: read further back in one go
        else:
            end = first_newline_end  # the next window ends with the line that was cut here, now whole
    return 0, GENESIS


class AuditWriter:
    """Appends audit records to ``path`` (created with mode 0600) and optionally mirrors them to SQLite."""

    def __init__(self, path: str | Path, *, sqlite: str | Path | None = None, fsync: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        self._fsync = fsync
        self._lock = threading.Lock()
        self._known: tuple[int, int, str] | None = None  # (file size, seq, hash) after our last append
        self.mirror = SqliteMirror(sqlite) if sqlite is not None else None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            if self._fd < 0:
                raise ValueError(f"audit writer for {self.path} is closed")
            if fcntl is not None:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)

    def append(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Chain ``fields`` to the file as the next record and return the full record (with seq and hashes)."""
        with self._locked():
            size = os.fstat(self._fd).st_size
            if self._known is not None and self._known[0] == size:
                seq, prev = self._known[1], self._known[2]
            else:
                seq, prev = read_head(self._fd, size)
            record: dict[str, Any] = {"seq": seq + 1, **fields, "prev_hash": prev}
            record["hash"] = record_hash(record)
            data = canonical(record).encode("utf-8") + b"\n"
            if size and os.pread(self._fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # a cut-short line before us stays visible to verify, on its own line
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            if self._fsync:
                os.fsync(self._fd)
            self._known = (size + len(data), record["seq"], record["hash"])
            if self.mirror is not None:
                try:
                    self.mirror.insert(record)
                except Exception as exc:  # the JSONL file is the record; the mirror can be rebuilt from it
                    log.warning("audit: SQLite mirror write failed (%s); run 'hermes audit sqlite'", exc)
            return record

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            if self.mirror is not None:
                self.mirror.close()

    def __enter__(self) -> AuditWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
