"""Drop-in plugin files: an AST pre-scan decides which ``*.py`` files may be imported at all.

A file is imported when it registers tools or implements hooks in any form the scan can see: a file that
imports ``hermes_core`` (in any spelling: ``from hermes_core import registry as r``, ``import hermes_core``...)
and calls ``register(...)`` anywhere (inside an ``if``, a loop, a helper function, through an alias), or
defines an ``@hookimpl`` function (aliases included); a top-level ``registry.register(...)`` statement counts
even without the import (its ``NameError`` is then reported). Anything else is never executed: a file that
imports ``hermes_core`` but shows neither is reported as a problem with the reason, any other file as "not a
plugin". Verdicts are cached on disk by (path, mtime_ns, size), so a warm start stats the files and parses
nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..fileio import atomic_write

if TYPE_CHECKING:
    import ast

__all__ = ["ScanVerdict", "SourceScan", "analyse_source", "scan_directory", "scan_source"]

_CACHE_VERSION = 2
CORE = "hermes_core"


class ScanVerdict(NamedTuple):
    """Whether a file may be imported (``eligible``), and why not when it may not (``error`` or ``reason``).

    ``problem`` marks a file meant as a plugin (it imports ``hermes_core``) that the scan cannot see register
    anything: it is not imported, and the doctor reports it as an error. ``detail`` says more about where the
    registrations are (used when an imported file turns out to register nothing).
    """

    path: Path
    eligible: bool
    reason: str = ""
    error: str | None = None
    problem: bool = False
    detail: str = ""
    stamp: tuple[int, int] | None = None  # (st_mtime_ns, st_size) as the scan saw the file


class SourceScan(NamedTuple):
    """What the scan found in one file's source."""

    eligible: bool
    reason: str
    imports_core: bool = False
    detail: str = ""


class _Names:
    """The names a module binds to ``hermes_core``, its registry, ``registry.register`` and ``hookimpl``."""

    def __init__(self) -> None:
        self.core: set[str] = set()
        self.registry: set[str] = set()
        self.register: set[str] = set()
        self.hookimpl: set[str] = set()
        self.imports_core = False

    def is_registry(self, node: ast.expr) -> bool:
        import ast

        if isinstance(node, ast.Name):
            return node.id in self.registry
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "registry"
            and isinstance(node.value, ast.Name)
            and node.value.id in self.core
        )

    def is_register(self, node: ast.expr) -> bool:
        import ast

        if isinstance(node, ast.Name):
            return node.id in self.register
        return isinstance(node, ast.Attribute) and node.attr == "register" and self.is_registry(node.value)

    def is_hookimpl(self, node: ast.expr) -> bool:
        import ast

        target = node.func if isinstance(node, ast.Call) else node
        if isinstance(target, ast.Name):
            return target.id in self.hookimpl or target.id == "hookimpl"
        return isinstance(target, ast.Attribute) and target.attr == "hookimpl"


def _collect_names(tree: ast.Module) -> _Names:
    import ast

    names = _Names()
    assignments: list[ast.Assign] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == CORE or alias.name.startswith(CORE + "."):
                    names.imports_core = True
                    if alias.asname is None:
                        names.core.add(CORE)
                    elif alias.name == CORE:
                        names.core.add(alias.asname)
                    elif alias.name == f"{CORE}.registry":
                        names.registry.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module != CORE and not node.module.startswith(CORE + "."):
                continue
            names.imports_core = True
            for alias in node.names:
                bound = alias.asname or alias.name
                if alias.name == "*":
                    names.registry.add("registry")
                    names.hookimpl.add("hookimpl")
                    if node.module == f"{CORE}.registry":
                        names.register.add("register")
                elif alias.name == "registry":
                    names.registry.add(bound)
                elif alias.name == "register" and node.module == f"{CORE}.registry":
                    names.register.add(bound)
                elif alias.name == "hookimpl":
                    names.hookimpl.add(bound)
        elif isinstance(node, ast.Assign):
            assignments.append(node)
    for _ in range(3):  # aliases of aliases: reg = registry; add = reg.register
        before = (len(names.registry), len(names.register))
        for node in assignments:
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if names.is_registry(node.value):
                names.registry.update(targets)
            elif names.is_register(node.value):
                names.register.update(targets)
        if (len(names.registry), len(names.register)) == before:
            break
    return names


def _top_level_register(node: ast.stmt) -> bool:
    """The plain form: a top-level statement ``registry.register(...)`` (recognised even without the import)."""
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


def _functions_calling_register(tree: ast.Module, names: _Names) -> tuple[bool, list[str]]:
    """Whether a register call sits outside any function, and the functions that contain the others."""
    import ast

    outside = False
    inside: list[str] = []

    def visit(node: ast.AST, function: str | None) -> None:
        nonlocal outside
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, getattr(child, "name", "<lambda>"))
                continue
            if isinstance(child, ast.Call) and (
                names.is_register(child.func)
                or (isinstance(child.func, ast.Attribute) and child.func.attr == "register")
            ):
                if function is None:
                    outside = True
                elif function not in inside:
                    inside.append(function)
            visit(child, function)

    visit(tree, None)
    return outside, inside


def analyse_source(source: bytes | str, filename: str = "<drop-in>") -> SourceScan:
    """What a drop-in file does, from its syntax tree. Raises SyntaxError/ValueError when it does not parse."""
    import ast

    tree = ast.parse(source, filename=filename)
    if any(_top_level_register(node) for node in tree.body):
        return SourceScan(True, "calls registry.register at top level", True)
    names = _collect_names(tree)
    hooks = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any(names.is_hookimpl(d) for d in node.decorator_list)
    ]
    if not names.imports_core:
        return SourceScan(False, "not a plugin: it neither imports hermes_core nor calls registry.register")
    outside, inside = _functions_calling_register(tree, names)
    if inside and not outside:
        detail = f"registry.register(...) is only called inside {', '.join(f'{f}()' for f in inside)}"
    else:
        detail = ""
    if outside or inside:
        return SourceScan(True, "calls register(...)", True, detail)
    if hooks:
        return SourceScan(True, "defines @hookimpl functions", True)
    return SourceScan(
        False,
        "imports hermes_core but calls no registry.register(...) and defines no @hookimpl function",
        True,
    )


def scan_source(source: bytes | str, filename: str = "<drop-in>") -> tuple[bool, str]:
    """Return (eligible, reason). Raises SyntaxError/ValueError for files that do not parse."""
    found = analyse_source(source, filename)
    return found.eligible, found.reason


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
        if isinstance(hit, list) and len(hit) == 6 and hit[:2] == key:
            found = SourceScan(bool(hit[2]), str(hit[3]), bool(hit[4]), str(hit[5]))
        else:
            changed = True
            try:
                found = analyse_source(path.read_bytes(), str(path))
            except SyntaxError as err:
                verdicts.append(ScanVerdict(path, False, error=f"SyntaxError: {err.msg} (line {err.lineno})"))
                continue
            except (OSError, ValueError) as err:
                verdicts.append(ScanVerdict(path, False, error=f"{type(err).__name__}: {err}"))
                continue
        fresh[str(path)] = [*key, found.eligible, found.reason, found.imports_core, found.detail]
        problem = found.imports_core and not found.eligible
        verdicts.append(
            ScanVerdict(
                path,
                found.eligible,
                found.reason,
                problem=problem,
                detail=found.detail,
                stamp=(key[0], key[1]),
            )
        )

    if cache_file is not None and (changed or len(fresh) != len(cache)):
        try:  # a cache: losing it in a crash only costs a rescan, so no fsync
            atomic_write(cache_file, json.dumps({"v": _CACHE_VERSION, "files": fresh}), fsync=False)
        except OSError:
            pass
    return verdicts
