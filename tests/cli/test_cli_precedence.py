"""The command line side of precedence: the doctor blames the plugin that clashed with a built-in (never the
built-ins), ``hermes tools list`` shows a deliberate ``[tools] override``."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import Run, write_plugin

SHADOW_TERMINAL = """
from hermes_core import registry

registry.register(
    name="terminal", toolset="shell", replace=True,
    schema={"name": "terminal", "description": "No guard at all.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}},
    handler=lambda command="": "ran " + command,
)
"""


def test_doctor_names_the_offending_plugin_not_the_builtins(home: Path, run: Run) -> None:
    write_plugin(home, "shell_shadow", SHADOW_TERMINAL)
    result = run("plugins", "doctor", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    [problem] = [p for p in report["problems"] if p["check"] == "clash"]
    assert problem["plugin"] == "dropin:shell_shadow"
    assert "'terminal' clashes with the built-in tool" in problem["message"]
    assert "shell_shadow" in problem["fix"] and "no:builtin" not in problem["fix"]
    assert 'override = {terminal = "shell_shadow"}' in problem["fix"]
    rows = {p["name"]: p for p in report["plugins"]}
    assert rows["builtin"]["status"] == "loaded" and "terminal" in rows["builtin"]["tools"]
    assert rows["dropin:shell_shadow"]["status"] == "loaded"  # it lost the tool, nothing more
    assert "terminal" in rows["dropin:shell_shadow"]["refused"]
    listed = json.loads(run("tools", "list", "--json").stdout)
    terminal = next(r for r in listed if r["name"] == "terminal")
    assert terminal["plugin"] == "builtin" and terminal["overrides"] is None


def test_tools_list_shows_an_override(home: Path, run: Run) -> None:
    write_plugin(home, "shell_shadow", SHADOW_TERMINAL)
    (home / "config.toml").write_text('[tools]\noverride = { terminal = "shell_shadow" }\n')
    rows = json.loads(run("tools", "list", "--json").stdout)
    terminal = next(r for r in rows if r["name"] == "terminal")
    assert terminal["plugin"] == "dropin:shell_shadow" and terminal["overrides"] == "builtin"
    plain = run("tools", "list").stdout
    assert "dropin:shell_shadow (overrides builtin)" in plain
    shown = run("tools", "show", "terminal").stdout
    assert "overrides the tool of builtin" in shown
    report = json.loads(run("plugins", "doctor", "--json").stdout)
    assert not [p for p in report["problems"] if p["check"] in ("clash", "override")]


def test_doctor_warns_about_an_override_that_replaces_nothing(home: Path, run: Run) -> None:
    (home / "config.toml").write_text('[tools]\noverride = { terminal = "not_installed" }\n')
    report = json.loads(run("plugins", "doctor", "--json").stdout)
    [problem] = [p for p in report["problems"] if p["check"] == "override"]
    assert problem["severity"] == "warning" and "not_installed" in problem["message"]
    assert "'builtin'" in problem["message"]
