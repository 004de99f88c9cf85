"""The layers import downward only (design.md): the registry is a leaf, hermes_core never imports hermes_builtin,
the built-ins and the example plugins use only public names of hermes_core, and no module imports itself back
through others (the import graph is built from the code, imports inside functions included)."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "hermes_core"


def public_modules() -> set[str]:
    """The public modules, as ``hermes_core/__init__.py``'s docstring lists them (the one list there is)."""
    doc = ast.get_docstring(ast.parse((CORE / "__init__.py").read_text("utf-8"))) or ""
    return set(re.findall(r"^- ``(hermes_core(?:\.\w+)*)``:", doc, re.MULTILINE))


PUBLIC = public_modules()

# Circles that are allowed to stay, each inside one package and for a stated reason. Every other circle fails,
# and none may ever pass through system.py (the facade sits above everything it uses) or run inside cli/.
ALLOWED_CIRCLES = {
    # the command analyzer and its rule tables call each other while walking a command (mutual recursion)
    frozenset({"hermes_core.security._analyze", "hermes_core.security._rules"}),
    # a path's risk is judged with the protected-state rules, which classify paths with the target helpers
    frozenset({"hermes_core.security._protected", "hermes_core.security._targets"}),
    # context.environment makes the session's environment (environments), which runs in the sandbox, which reads
    # the workspace override and ApprovalDenied from context: to break it, those two move below the sandbox
    frozenset(
        {
            "hermes_core.context",
            "hermes_core.environments",
            "hermes_core.environments._local",
            "hermes_core.environments._registry",
            "hermes_core.sandbox",
            "hermes_core.sandbox._ready",
            "hermes_core.sandbox._sandbox",
        }
    ),
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


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, base: Path, *, typing_only: bool = True) -> Iterator[tuple[str, list[str], int]]:
    """``(absolute module, imported names, line)`` for every import in the file, relative ones resolved, at any
    depth (inside functions too); ``typing_only=False`` leaves out the ``if TYPE_CHECKING:`` blocks, which
    never run."""
    package = module_name(path, base)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]

    def walk(node: ast.AST) -> Iterator[tuple[str, list[str], int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child.test) and not typing_only:
                for other in child.orelse:
                    yield from walk_one(other)
                continue
            yield from walk_one(child)

    def walk_one(node: ast.AST) -> Iterator[tuple[str, list[str], int]]:
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
        yield from walk(node)

    yield from walk(ast.parse(path.read_text("utf-8"), str(path)))


def ours(module: str) -> bool:
    return module.split(".")[0] in {"hermes_core", "hermes_builtin"}


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of hermes_core it imports when it runs (``from pkg import mod`` counts as ``mod``)."""
    modules = {module_name(path, ROOT): path for path in python_files(CORE)}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target, names, _ in imports(path, ROOT, typing_only=False):
            candidates = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules] or [target]
            for candidate in candidates:
                while candidate and candidate not in modules:
                    candidate = candidate.rpartition(".")[0]
                if candidate and candidate != name:
                    graph[name].add(candidate)
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_the_public_modules_are_listed_once_and_exist() -> None:
    assert {"hermes_core", "hermes_core.registry", "hermes_core.schema", "hermes_core.security"} <= PUBLIC
    for name in sorted(PUBLIC):
        module = importlib.import_module(name)
        assert module.__doc__, f"{name} is public: it needs a docstring"
        assert isinstance(getattr(module, "__all__", None), list | tuple), (
            f"{name} is public: it needs __all__"
        )
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert missing == [], f"{name}.__all__ names what it does not define: {missing}"


def test_the_registry_is_a_leaf() -> None:
    # ... but for the logging shim, itself a leaf: it loads ``logging`` at the first record
    allowed = {
        "registry.py": {"hermes_core._registry"},
        "_registry.py": {"hermes_core._log"},
        "_log.py": set(),
    }
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


def test_no_import_circles() -> None:
    """No circle through the facade or inside the CLI; elsewhere only the few listed, each inside one package."""
    found = circles(import_graph())
    through_facade = [sorted(c) for c in found if "hermes_core.system" in c]
    assert through_facade == [], f"import circles through hermes_core/system.py: {through_facade}"
    in_cli = [sorted(c) for c in found if any(m.startswith("hermes_core.cli") for m in c)]
    assert in_cli == [], f"import circles in hermes_core/cli/: {in_cli}"
    unexpected = [sorted(c) for c in found if not any(c <= allowed for allowed in ALLOWED_CIRCLES)]
    assert unexpected == [], f"new import circles: {unexpected}"


def test_the_graph_sees_imports_inside_functions() -> None:
    """The graph is what the circle test stands on: a function-level import is an edge, a typing-only one is not."""
    graph = import_graph()
    assert "hermes_core.mcp.client" in graph["hermes_core.system"]  # imported inside ToolSystem._start_mcp
    assert "hermes_core.system" not in graph["hermes_core.mcp.client"]  # only under TYPE_CHECKING there
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


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
