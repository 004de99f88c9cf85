"""Entry points of the ``hermes.tools`` group, with the scan cached across processes.

Scanning every installed distribution costs 40-70 ms. The result is cached in a small JSON file keyed by
the directories on ``sys.path`` and their modification times: installing or removing a distribution
changes its site-packages directory's mtime, which invalidates the cache. The current directory (on
``sys.path`` as ``''`` under ``python -c`` and ``-m``) is keyed by the distribution metadata folders in it
instead: its own mtime changes whenever any file there is created, which would make every start a cold one.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import NamedTuple

from ..fileio import atomic_write

__all__ = ["GROUP", "EntryPointInfo", "discover"]

GROUP = "hermes.tools"
_CACHE_VERSION = 2


class EntryPointInfo(NamedTuple):
    """One ``hermes.tools`` entry point: ``name = value`` from ``distribution`` ``version``."""

    name: str
    value: str
    distribution: str
    version: str

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def attr(self) -> str | None:
        attr = self.value.partition(":")[2].strip()
        return attr or None


def _metadata_key(directory: str) -> list[object]:
    """The distribution metadata folders of ``directory`` and their mtimes (what entry points come from)."""
    found: list[object] = []
    try:
        with os.scandir(directory) as it:
            for item in it:
                if item.name.endswith((".dist-info", ".egg-info")):
                    found.append([item.name, item.stat().st_mtime_ns])
    except OSError:
        pass
    return sorted(found, key=str)


def _path_key() -> list[list[object]]:
    key: list[list[object]] = []
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    for entry in sys.path:
        if entry in ("", ".") or entry == cwd:
            key.append([entry, _metadata_key(entry or ".")])
            continue
        try:
            st = os.stat(entry)
        except OSError:
            continue
        key.append([entry, st.st_mtime_ns])
    return key


def _scan(group: str) -> list[EntryPointInfo]:
    import importlib_metadata

    found: list[EntryPointInfo] = []
    for ep in importlib_metadata.entry_points(group=group):
        dist = ep.dist
        found.append(
            EntryPointInfo(
                name=ep.name,
                value=ep.value,
                distribution=dist.name if dist is not None else "",
                version=dist.version if dist is not None else "",
            )
        )
    return found


def discover(cache_file: Path | None, group: str = GROUP) -> list[EntryPointInfo]:
    """The entry points of ``group``; served from ``cache_file`` when nothing on sys.path changed."""
    key = _path_key()
    if cache_file is not None:
        try:
            data = json.loads(cache_file.read_text("utf-8"))
            if data.get("v") == _CACHE_VERSION and data.get("group") == group and data.get("key") == key:
                return [EntryPointInfo(*row) for row in data["entry_points"]]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            pass  # missing, stale or corrupt: rescan
    found = _scan(group)
    if cache_file is not None:
        payload = {
            "v": _CACHE_VERSION,
            "group": group,
            "key": key,
            "entry_points": [[e.name, e.value, e.distribution, e.version] for e in found],
        }
        try:  # a cache: losing it in a crash only costs a rescan, so no fsync
            atomic_write(cache_file, json.dumps(payload), fsync=False)
        except OSError:
            pass
    return found
