"""Drop-in plugin files: an AST pre-scan decides which ``*.py`` files may be imported at all.

A file is imported only when its top level calls ``registry.register(...)`` or defines a function
decorated with ``@hookimpl``; anything else is never executed. Verdicts are cached on disk by
(path, mtime_ns, size), so a warm start stats the files and parses nothing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ast

__all__ = ["ScanVerdict", "scan_directory", "scan_source"]

_CACHE_VERSION = 1


@dataclass(frozen=True, slots=True)
class ScanVerdict:
    """Whether a file may be imported (``eligible``), and why not when it may not (``error`` or ``reason``)."""

    path: Path
    eligible: bool
    reason: str = ""
    error: str | None = None


def _is_hookimpl(decorator: ast.expr) -> bool:
    import ast

    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Name):
        return target.id == "hookimpl"
    if isinstance(target, ast.Attribute):
        return target.attr == "hookimpl"
    return False


def _is_register_call(node: ast.stmt) -> bool:
    import ast

    value = node.value if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "register"
        and isinstance(func.value, ast.Name)
        and func.value.id == "registry"
    )


def scan_source(source: bytes | str, filename: str = "<drop-in>") -> tuple[bool, str]:
    """Return (eligible, reason). Raises SyntaxError/ValueError for files that do not parse."""
    import ast

    tree = ast.parse(source, filename=filename)
    for node in tree.body:
        if _is_register_call(node):
            return True, "calls registry.register at top level"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            _is_hookimpl(d) for d in node.decorator_list
        ):
            return True, "defines @hookimpl functions"
    return False, "no top-level registry.register(...) call or @hookimpl function"


def _cache_key(st: os.stat_result) -> list[int]:
    return [st.st_mtime_ns, st.st_size]


def scan_directory(directory: Path, cache_file: Path | None) -> list[ScanVerdict]:
    """Verdicts for every ``*.py`` file of ``directory`` (not recursive, no ``_``-prefixed files), sorted."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".py") and not n.startswith(("_", ".")))
    except FileNotFoundError:
        return []
    except OSError as err:
        return [ScanVerdict(directory, False, error=f"cannot list plugin folder: {err}")]

    cache: dict[str, list[object]] = {}
    if cache_file is not None:
        try:
            data = json.loads(cache_file.read_text("utf-8"))
            if (
                isinstance(data, dict)
                and data.get("v") == _CACHE_VERSION
                and isinstance(data.get("files"), dict)
            ):
                cache = data["files"]
        except (OSError, ValueError):
            pass  # missing or corrupt cache: rescan everything

    verdicts: list[ScanVerdict] = []
    fresh: dict[str, list[object]] = {}
    changed = False
    for name in names:
        path = directory / name
        try:
            st = path.stat()
        except OSError as err:
            verdicts.append(ScanVerdict(path, False, error=f"cannot stat: {err}"))
            continue
        key = _cache_key(st)
        hit = cache.get(str(path))
        if isinstance(hit, list) and len(hit) == 4 and hit[:2] == key:
            eligible, reason = bool(hit[2]), str(hit[3])
        else:
            changed = True
            try:
                eligible, reason = scan_source(path.read_bytes(), str(path))
            except SyntaxError as err:
                verdicts.append(ScanVerdict(path, False, error=f"SyntaxError: {err.msg} (line {err.lineno})"))
                continue
            except (OSError, ValueError) as err:
                verdicts.append(ScanVerdict(path, False, error=f"{type(err).__name__}: {err}"))
                continue
        fresh[str(path)] = [*key, eligible, reason]
        verdicts.append(ScanVerdict(path, eligible, reason))

    if cache_file is not None and (changed or len(fresh) != len(cache)):
        try:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            import tempfile

            fd, tmp = tempfile.mkstemp(dir=cache_file.parent, prefix=".scan-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"v": _CACHE_VERSION, "files": fresh}, fh)
            os.replace(tmp, cache_file)
        except OSError:
            pass
    return verdicts
