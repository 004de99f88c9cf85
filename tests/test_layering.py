"""The layers import downward only (design.md): the registry is a leaf, hermes_core never imports hermes_builtin,
and the built-ins and the example plugins use only public names of hermes_core."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "hermes_core"

# The public modules of hermes_core a plugin may import from (design.md), each by the names of its __all__.
# hermes_core.cli is public for plugin commands (current_system); hermes_core.sandbox is the execution layer's
# walls and hermes_core.environments where a session's commands and files live;
# safehttp the SSRF-guarded HTTP clients; agent and models the agent loop and model clients; content renders
# outcomes with attachments for providers; selection the tool-search names (SEARCH_TOOL, ToolDoc, Ranker) that
# ranker plugins and the built-in tool_search use; scheduler the jobs the cronjob tool makes, stores the SQL layer
# the scheduler and the kanban board share.
PUBLIC = {
    "hermes_core",
    "hermes_core.registry",
    "hermes_core.security",
    "hermes_core.schema",
    "hermes_core.fileio",
    "hermes_core.testing",
    "hermes_core.cli",
    "hermes_core.sandbox",
    "hermes_core.environments",
    "hermes_core.safehttp",
    "hermes_core.agent",
    "hermes_core.models",
    "hermes_core.content",
    "hermes_core.selection",
    "hermes_core.scheduler",
    "hermes_core.stores",
}


def python_files(*roots: Path) -> Iterator[Path]:
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if not any(
                part in {"build", ".venv", "__pycache__"} or part.endswith(".egg-info") for part in path.parts
            ):
                yield path


def module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, base: Path) -> Iterator[tuple[str, list[str], int]]:
    """``(absolute module, imported names, line)`` for every import in the file, relative ones resolved."""
    package = module_name(path, base)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*parent, node.module] if node.module else parent)
            else:
                module = node.module or ""
            yield module, [a.name for a in node.names], node.lineno


def ours(module: str) -> bool:
    return module.split(".")[0] in {"hermes_core", "hermes_builtin"}


def test_the_registry_is_a_leaf() -> None:
    allowed = {"registry.py": {"hermes_core._registry"}, "_registry.py": set()}
    for name, allowed_modules in allowed.items():
        found = {m for m, _, _ in imports(CORE / name, ROOT) if ours(m)}
        assert found <= allowed_modules, f"hermes_core/{name} imports {sorted(found - allowed_modules)}"


def test_hermes_core_never_imports_hermes_builtin() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in python_files(CORE)
        for module, _, line in imports(path, ROOT)
        if module.split(".")[0] == "hermes_builtin"
    ]
    assert bad == []


def test_builtins_and_example_plugins_use_only_public_names() -> None:
    bad = []
    plugin_roots = [ROOT / "hermes_builtin", *sorted((ROOT / "example_plugins").glob("*/hermes_*"))]
    plugin_roots += sorted((ROOT / "example_plugins").glob("*/hermes_*.py"))
    for path in python_files(*(r for r in plugin_roots if r.is_dir())):
        bad += _private_uses(path)
    for path in (r for r in plugin_roots if r.is_file()):
        bad += _private_uses(path)
    assert bad == []


def _private_uses(path: Path) -> list[str]:
    base = path.parent if path.name != "__init__.py" else path.parent.parent
    out = []
    for module, names, line in imports(path, ROOT if "hermes_builtin" in path.parts else base):
        if module.split(".")[0] != "hermes_core":
            continue
        where = f"{path.relative_to(ROOT)}:{line}"
        if module not in PUBLIC:
            out.append(f"{where} imports the private module {module}")
            continue
        public = set(getattr(importlib.import_module(module), "__all__", ()))
        private = [n for n in names if n not in public]
        if private:
            out.append(f"{where} imports {', '.join(private)} from {module}, which does not export them")
    return out


def test_hooks_are_called_only_through_the_hook_runner() -> None:
    """Everything that calls hooks goes through ``hermes_core.plugins`` (``HookRunner.call``/``each``): code that
    walks pluggy's implementations itself skips hook wrappers and the fault policy."""
    bad = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in python_files(CORE, ROOT / "hermes_builtin")
        if path.relative_to(ROOT).parts[:2] != ("hermes_core", "plugins")
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if "get_hookimpls(" in line
    ]
    assert bad == []
