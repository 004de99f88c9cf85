"""The built-ins register module by module: a module that fails to import (or to register) costs only its own
tools, is recorded with its reason on the plugin's record and reported by ``hermes plugins doctor``; a deleted
module is simply gone. Tested in a copied, installed tree run by a fresh interpreter, and in-process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hermes_builtin
import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.plugins import PluginLoadError


def _builtin_tool_count() -> int:
    """How many tools the built-in plugin registers from this source tree (a copy must load every one)."""
    with ToolSystem.load(
        load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin]
    ) as system:
        return sum(1 for e in system.registry.entries() if e.plugin == "hermes_builtin.plugin")


BUILTIN_TOOLS = _builtin_tool_count()

PROBE = textwrap.dedent(
    """
    import json, sys
    import hermes_builtin
    from hermes_core import ToolSystem
    system = ToolSystem.load()
    record = next(r for r in system.plugin_records() if r.name == "builtin")
    print(json.dumps({
        "package": hermes_builtin.__file__,
        "tools": sorted(e.name for e in system.registry.entries() if e.plugin == "builtin"),
        "status": record.status,
        "failed_units": record.failed_units,
        "note": record.note,
        "core": sorted(system.toolsets.resolve(["hermes-core"])),
        "problems": system.toolsets.problems(),
    }))
    """
)


@pytest.fixture
def installed_copy(tmp_path: Path) -> Path:
    """A copy of the installed ``hermes_builtin`` package in a folder that goes first on ``sys.path``."""
    site = tmp_path / "site"
    shutil.copytree(
        Path(hermes_builtin.__file__).parent,
        site / "hermes_builtin",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return site


def _env(site: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(
        PYTHONPATH=str(site),
        HERMES_HOME=str(home),
        HERMES_LOAD_PLUGINS="builtin",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def _load(site: Path, tmp_path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=_env(site, tmp_path / "home"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    assert str(data["package"]).startswith(str(site))  # the copy was loaded, not the source tree
    return data


def test_the_copy_loads_every_builtin_tool(installed_copy: Path, tmp_path: Path) -> None:
    data = _load(installed_copy, tmp_path)
    assert len(data["tools"]) == BUILTIN_TOOLS  # type: ignore[arg-type]
    assert data["failed_units"] == {} and data["problems"] == []


def test_a_broken_module_costs_only_its_own_tools(installed_copy: Path, tmp_path: Path) -> None:
    memory = installed_copy / "hermes_builtin" / "tools" / "work" / "memory.py"
    memory.write_text(memory.read_text() + "\ndef broken(:\n")
    data = _load(installed_copy, tmp_path)
    tools = data["tools"]
    assert isinstance(tools, list) and len(tools) == BUILTIN_TOOLS - 1 and "memory" not in tools
    assert {"todo", "read_file", "terminal", "skills_list", "browser_navigate"} <= set(tools)
    assert data["status"] == "loaded"
    failed = data["failed_units"]
    assert isinstance(failed, dict) and list(failed) == ["hermes_builtin.tools.work.memory"]
    assert "SyntaxError" in failed["hermes_builtin.tools.work.memory"]
    assert "1 part failed to load" in str(data["note"])
    # the composites survive: the baseline lacks only memory, and the doctor is told which name is missing
    assert "memory" not in data["core"] and "todo" in data["core"]  # type: ignore[operator]
    assert any("memory" in p for p in data["problems"])  # type: ignore[union-attr]

    doctor = subprocess.run(
        [sys.executable, "-m", "hermes_core.cli", "plugins", "doctor", "--json"],
        env=_env(installed_copy, tmp_path / "home"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert doctor.returncode == 1, doctor.stderr  # an error: tools are missing
    problems = json.loads(doctor.stdout)["problems"]
    found = [p for p in problems if "hermes_builtin.tools.work.memory failed to load" in p["message"]]
    assert len(found) == 1 and found[0]["severity"] == "error" and found[0]["plugin"] == "builtin"
    assert "SyntaxError" in found[0]["message"] and "fix the syntax error" in found[0]["fix"]


def test_a_module_whose_dependency_is_missing_says_what_to_install(
    installed_copy: Path, tmp_path: Path
) -> None:
    todo = installed_copy / "hermes_builtin" / "tools" / "work" / "todo.py"
    todo.write_text(todo.read_text() + "\nimport hermes_no_such_dependency\n")
    data = _load(installed_copy, tmp_path)
    assert len(data["tools"]) == BUILTIN_TOOLS - 1  # type: ignore[arg-type]
    reason = data["failed_units"]["hermes_builtin.tools.work.todo"]  # type: ignore[index]
    assert "No module named 'hermes_no_such_dependency'" in reason


def test_a_deleted_module_is_simply_gone(installed_copy: Path, tmp_path: Path) -> None:
    (installed_copy / "hermes_builtin" / "tools" / "work" / "clarify.py").unlink()
    data = _load(installed_copy, tmp_path)
    assert len(data["tools"]) == BUILTIN_TOOLS - 1 and "clarify" not in data["tools"]  # type: ignore[operator]
    assert data["failed_units"] == {}


def test_a_failing_register_is_rolled_back_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import hermes_builtin.tools.work.todo as todo

    def half_register(registry: object) -> None:
        registry.register(  # type: ignore[attr-defined]
            name="todo_half", toolset="todo", schema={"name": "todo_half", "parameters": {"type": "object"}},
            handler=lambda: "x",
        )  # fmt: skip
        raise RuntimeError("register broke halfway")

    monkeypatch.setattr(
        hermes_builtin.plugin, "tool_modules", lambda: ["work.todo", "work.memory", "work.nope"]
    )
    monkeypatch.setattr(todo, "register", half_register)
    with ToolSystem.load(
        load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin], workspace=tmp_path
    ) as system:
        assert system.registry.names() == ["memory"]  # todo_half was rolled back with its module
        record = system.plugins.records["hermes_builtin.plugin"]
        assert record.status == "loaded" and record.tools == ["memory"]
        assert record.failed_units == {
            "hermes_builtin.tools.work.todo": "RuntimeError: register broke halfway",
            "hermes_builtin.tools.work.nope": "ModuleNotFoundError: No module named 'hermes_builtin.tools.work.nope'",
        }
        assert record.as_dict()["failed_units"] == record.failed_units


def test_strict_mode_makes_a_failed_module_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(hermes_builtin.plugin, "tool_modules", lambda: ["work.memory", "work.nope"])
    with pytest.raises(PluginLoadError, match=r"hermes_builtin\.tools\.work\.nope failed to load"):
        ToolSystem.load(
            load_entry_points=False,
            plugins_dir=False,
            plugins=[hermes_builtin.plugin],
            workspace=tmp_path,
            strict=True,
        )


def test_finding_the_modules_imports_nothing() -> None:
    code = (
        "import sys, hermes_builtin.plugin as p; mods = p.tool_modules(); "
        "print(len(mods), any(m.startswith('hermes_builtin.tools.') and m.count('.') > 2 for m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    count, imported = done.stdout.split()
    assert int(count) >= 20 and imported == "False"
