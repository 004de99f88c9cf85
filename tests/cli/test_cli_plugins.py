"""``hermes plugins list``, global plugin options, tracing and plugin commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import (
    BROKEN_COMMANDS,
    BROKEN_IMPORT,
    COMMANDS,
    NOT_A_PLUGIN,
    POLICY,
    Run,
    run_json,
    write_plugin,
)

PLUGIN_KEYS = {"name", "distribution", "version", "source", "status", "hooks", "tools", "error"}


def test_plugins_list_json(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "policy", POLICY)
    rows = {r["name"]: r for r in run_json(run, "plugins", "list", "--json")}
    assert set(rows["dropin:greet"]) >= PLUGIN_KEYS
    assert rows["dropin:greet"]["source"] == "drop-in"
    assert rows["dropin:greet"]["tools"] == ["greet", "greet_fail", "secret_greet"]
    assert rows["dropin:policy"]["hooks"] == ["pre_tool_call"]
    assert rows["builtin"]["source"] == "built-in" and rows["builtin"]["distribution"] == "hermes-tools"
    assert all(r["status"] not in ("blocked", "skipped") for r in rows.values())


def test_plugins_list_all_shows_blocked_and_skipped(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "notes", NOT_A_PLUGIN)
    rows = {r["name"]: r for r in run_json(run, "plugins", "list", "--all", "--json")}
    assert rows["dropin:notes"]["status"] == "skipped"
    blocked = [r for r in rows.values() if r["status"] == "blocked"]
    assert all(r["note"] for r in blocked)


def test_broken_drop_in_is_listed_and_does_not_break_others(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "broken", BROKEN_IMPORT)
    rows = {r["name"]: r for r in run_json(run, "plugins", "list", "--json")}
    assert rows["dropin:broken"]["status"] == "failed"
    assert "hermes_no_such_module_xyz" in rows["dropin:broken"]["error"]
    assert rows["dropin:greet"]["status"] == "loaded"
    result = run("call", "greet")
    assert result.exit_code == 0 and result.stdout.strip() == "hello world"


def test_block_option_and_plugins_dir(greet_home: Path, run: Run, tmp_path: Path) -> None:
    rows = {r["name"]: r for r in run_json(run, "-p", "no:greet", "plugins", "list", "--all", "--json")}
    assert rows["dropin:greet"]["status"] == "blocked"
    tools = {r["name"] for r in run_json(run, "-p", "no:greet", "tools", "list", "--all", "--json")}
    assert "greet" not in tools
    bad = run("-p", "greet", "tools", "list")
    assert bad.exit_code == 2 and "no:NAME" in bad.stderr
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "policy.py").write_text(POLICY)
    names = {r["name"] for r in run_json(run, "--plugins-dir", str(other), "plugins", "list", "--json")}
    assert "dropin:policy" in names and "dropin:greet" not in names


def test_load_plugins_env_limits_entry_points(greet_home: Path, run: Run) -> None:
    result = run("plugins", "list", "--all", "--json", env={"HERMES_LOAD_PLUGINS": "nothing-at-all"})
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["builtin"]["status"] == "blocked"
    assert rows["builtin"]["note"] == "not listed in HERMES_LOAD_PLUGINS"


def test_trace_plugins_prints_hook_calls_on_stderr(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "policy", POLICY)
    result = run("call", "greet", "name=bob", env={"HERMES_TRACE_PLUGINS": "1"})
    assert result.exit_code == 0
    assert "[hermes trace] pre_tool_call dropin:policy" in result.stderr
    assert "'name': 'bob'" in result.stderr
    assert result.stdout.strip() == "hello bob"
    quiet = run("call", "greet", "name=bob")
    assert "[hermes trace]" not in quiet.stderr


def test_plugin_commands_appear_and_cannot_replace_builtins(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "commands", COMMANDS)
    helped = run("--help")
    assert helped.exit_code == 0 and "hello" in helped.stdout
    result = run("hello", "ann")
    assert result.exit_code == 0
    assert result.stdout.startswith("hello ann from a system with ")
    assert "clashes with a built-in" in result.stderr
    tools = run("tools", "list", "--toolset", "greetings")
    assert "hijacked" not in tools.stdout and "greet" in tools.stdout


def test_broken_register_commands_never_breaks_the_cli(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "boom", BROKEN_COMMANDS)
    write_plugin(greet_home, "commands", COMMANDS)
    helped = run("--help")
    assert helped.exit_code == 0
    assert "command registration exploded" in helped.stderr
    assert run("hello").exit_code == 0
    assert run("tools", "list").exit_code == 0
    missing = run("no-such-command")
    assert missing.exit_code == 2 and "No such command" in missing.stderr


def test_trace_shows_register_commands(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "commands", COMMANDS)
    result = run("hello", env={"HERMES_TRACE_PLUGINS": "1"})
    assert "[hermes trace] register_commands dropin:commands" in result.stderr
    assert "added ['hello', 'tools']" in result.stderr


def test_rich_tables_on_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_core.cli._output import emit_table

    emit_table(["name", "tools"], [["[bold]x[/bold]", ["a", "b"]], ["y", None]], title="T", rich_output=True)
    out = capsys.readouterr().out
    assert "[bold]x[/bold]" in out  # plugin text is shown literally, never as markup
    assert "a, b" in out and "tools" in out  # lists wrap between their items
    assert "\t" not in out  # a table, not the plain tab-separated form


def test_plugins_list_names_the_drop_in_folder_and_lists_mcp_servers(home: Path, run: Run) -> None:
    import sys

    server = Path(__file__).resolve().parents[1] / "mcp" / "echo_server.py"
    (home / "config.toml").write_text(
        # a loaded machine may take more than the default 10 s to start a Python MCP server
        "[mcp]\nready_timeout = 60\n"
        f"[mcp.servers.demo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(server))}]\n"
    )
    result = run("plugins", "list")
    assert result.exit_code == 0
    assert f"# drop-in folder: {home / 'plugins'}" in result.stderr
    row = next(line.split("\t") for line in result.stdout.splitlines() if line.startswith("mcp:demo"))
    assert row[3] == "mcp" and row[4] == "ready" and "add" in row[6].split(",")
    rows = json.loads(run("plugins", "list", "--json").stdout)
    demo = next(r for r in rows if r["name"] == "mcp:demo")
    assert demo["source"] == "mcp" and "add" in demo["tools"]
