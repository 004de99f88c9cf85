"""The compiled drop-in files of one folder, kept together in one cache file.

A warm start then reads one file instead of a ``__pycache__`` entry per plugin (~45 us a file). An entry is used
only while its file's (mtime_ns, size) is what the scan saw, as a ``.pyc`` is; the header carries the
interpreter's bytecode magic, so another Python's bundle is ignored. The file is written only when something
changed, never when ``sys.dont_write_bytecode`` is set. It lives in hermes's cache, which the agent may not
change (``hermes_core.security``), as it may not change the plugin folder itself.
"""

from __future__ import annotations

import marshal
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Protocol

from ..fileio import atomic_write

_HEADER = b"hermes-dropin-code 1\n" + MAGIC_NUMBER
Stamp = tuple[int, int]  # (st_mtime_ns, st_size) of a source file


class _Loader(Protocol):
    def get_code(self, fullname: str) -> CodeType | None: ...


class CodeBundle:
    """Code objects by file path and stamp, read from ``file`` (None: nothing is kept)."""

    def __init__(self, file: Path | None) -> None:
        self.file = file
        self._old: dict[str, tuple[int, int, CodeType]] = _read(file) if file is not None else {}
        self._new: dict[str, tuple[int, int, CodeType]] = {}

    def code(self, path: Path, stamp: Stamp | None, loader: _Loader, module_name: str) -> CodeType | None:
        """The code of ``path`` as of ``stamp``: kept, or compiled by ``loader`` (None if it has none)."""
        key = str(path)
        if stamp is not None:
            kept = self._old.get(key)
            if (
                isinstance(kept, tuple)
                and len(kept) == 3
                and kept[:2] == stamp
                and isinstance(kept[2], CodeType)
            ):
                self._new[key] = kept
                return kept[2]
        code = loader.get_code(module_name)  # SyntaxError and OSError reach the caller, as in an import
        if stamp is not None and code is not None:
            self._new[key] = (*stamp, code)
        return code

    def save(self) -> None:
        """Write the bundle when its files changed (an entry compiled again, or a file gone)."""
        if self.file is None or sys.dont_write_bytecode:
            return
        if self._new.keys() == self._old.keys() and all(self._new[k] is self._old[k] for k in self._new):
            return
        try:  # a cache: losing it in a crash costs one compile per file, so no fsync
            atomic_write(self.file, _HEADER + marshal.dumps(self._new), mode=0o600, fsync=False)
        except (OSError, ValueError):  # ValueError: a code object marshal cannot write
            pass


def _read(file: Path) -> dict[str, tuple[int, int, CodeType]]:
    try:
        data = file.read_bytes()
    except OSError:
        return {}
    if not data.startswith(_HEADER):
        return {}
    try:
        found = marshal.loads(memoryview(data)[len(_HEADER) :])
    except (EOFError, ValueError, TypeError):
        return {}  # a torn or foreign file: everything is compiled again
    return found if isinstance(found, dict) else {}
