"""``hermes tools list/show``, ``hermes toolsets`` and ``hermes schema export``."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import Run, run_json

ROW_KEYS = {"name", "toolset", "plugin", "distribution", "version", "source", "available", "reason", "emoji"}


def test_tools_list_json_rows_carry_provenance_and_availability(greet_home: Path, run: Run) -> None:
    rows = {r["name"]: r for r in run_json(run, "tools", "list", "--json")}
    greet = rows["greet"]
    assert set(greet) >= ROW_KEYS
    assert greet["toolset"] == "greetings"
    assert greet["plugin"] == "dropin:greet"
    assert greet["source"] == "drop-in"
    assert greet["available"] is True and greet["reason"] == ""
    assert greet["emoji"] == "W"
    hidden = rows["secret_greet"]
    assert hidden["available"] is False
    assert hidden["reason"] == "missing environment variable HERMES_TEST_GREET_TOKEN"
    builtin = [r for r in rows.values() if r["plugin"] == "builtin"]
    assert all(r["source"] == "built-in" and r["distribution"] == "hermes-tools" for r in builtin)


def test_tools_list_plain_is_tab_separated_and_sorted(greet_home: Path, run: Run) -> None:
    result = run("tools", "list", "--toolset", "greetings")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split("\t") for line in lines] == [
        ["greet", "greetings", "dropin:greet", "drop-in", "yes", ""],
        ["greet_fail", "greetings", "dropin:greet", "drop-in", "yes", ""],
    ]


def test_tools_list_follows_the_config_selection_and_all_overrides_it(greet_home: Path, run: Run) -> None:
    (greet_home / "config.toml").write_text(
        '[toolsets]\nenabled = ["greetings"]\n[tools]\ndisabled = ["greet_fail"]\n'
    )
    names = {r["name"] for r in run_json(run, "tools", "list", "--json")}
    assert names == {"greet"}
    rows = {r["name"]: r for r in run_json(run, "tools", "list", "--all", "--json")}
    assert {"greet", "greet_fail", "secret_greet"} <= set(rows)
    assert rows["greet"]["selected"] is True
    assert rows["greet_fail"]["selected"] is False


def test_tools_list_unknown_toolset_is_a_usage_error(greet_home: Path, run: Run) -> None:
    result = run("tools", "list", "--toolset", "greeting")
    assert result.exit_code == 2
    assert "unknown toolset 'greeting'" in result.stderr
    assert "greetings" in result.stderr  # the suggestion


def test_tools_show_json_and_plain(greet_home: Path, run: Run) -> None:
    info = run_json(run, "tools", "show", "secret_greet", "--json")
    assert info["available"] is False
    assert info["requires_env"] == ["HERMES_TEST_GREET_TOKEN"]
    assert info["schema"]["name"] == "secret_greet"
    plain = run("tools", "show", "secret_greet")
    assert plain.exit_code == 0
    assert "hidden: missing environment variable HERMES_TEST_GREET_TOKEN" in plain.stdout
    assert '"name": "secret_greet"' in plain.stdout


def test_tools_show_env_makes_the_tool_available(greet_home: Path, run: Run) -> None:
    info = run_json_env(run, {"HERMES_TEST_GREET_TOKEN": "x"}, "tools", "show", "secret_greet", "--json")
    assert info["available"] is True and info["reason"] == ""


def run_json_env(run: Run, env: dict[str, str], *args: str) -> dict[str, object]:
    result = run(*args, env=env)
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_tools_show_unknown_tool_suggests(greet_home: Path, run: Run) -> None:
    result = run("tools", "show", "gret")
    assert result.exit_code == 1
    assert "no tool named 'gret'" in result.stderr and "greet" in result.stderr


def test_toolsets_report_resolved_tools_and_sizes(greet_home: Path, run: Run) -> None:
    (greet_home / "config.toml").write_text(
        '[toolsets.custom.friendly]\nincludes = ["greetings", "secrets"]\ndescription = "Be nice."\n'
    )
    data = run_json(run, "toolsets", "--json")
    rows = {r["name"]: r for r in data["toolsets"]}
    greetings = rows["greetings"]
    assert greetings["kind"] == "atomic"
    assert greetings["tools"] == ["greet", "greet_fail"]
    friendly = rows["friendly"]
    assert friendly["kind"] == "composite" and friendly["plugin"] == "config"
    assert friendly["tools"] == ["greet", "greet_fail"]  # secret_greet is hidden by its missing variable
    assert friendly["members"] == ["greet", "greet_fail", "secret_greet"]
    assert friendly["hidden"] == {"secret_greet": "missing environment variable HERMES_TEST_GREET_TOKEN"}
    defs = run_json(run, "schema", "export", "--toolset", "greetings")
    assert greetings["chars"] == len(json.dumps(defs))
    assert greetings["tokens_estimate"] == greetings["chars"] // 4
    assert data["tokens_estimate"] == "characters / 4"


def test_toolsets_plain_columns(greet_home: Path, run: Run) -> None:
    result = run("toolsets")
    assert result.exit_code == 0
    line = next(x for x in result.stdout.splitlines() if x.startswith("greetings\t"))
    _name, kind, count, members, chars, tokens, tools = line.split("\t")
    assert (kind, count, members, tools) == ("atomic", "2", "2", "greet,greet_fail")
    assert int(tokens) == int(chars) // 4
    assert "selected by the configuration" in result.stderr


def test_schema_export_every_format(greet_home: Path, run: Run) -> None:
    openai = run_json(run, "schema", "export", "--format", "openai", "--toolset", "greetings")
    assert [d["function"]["name"] for d in openai] == ["greet", "greet_fail"]
    anthropic = run_json(run, "schema", "export", "--format", "anthropic", "--toolset", "greetings")
    assert anthropic[0]["input_schema"]["properties"]["times"] == {"type": "integer"}
    gemini = run_json(run, "schema", "export", "--format", "gemini", "--toolset", "greetings")
    assert gemini[0]["parameters"]["type"] == "OBJECT"
    mcp = run_json(run, "schema", "export", "--format", "mcp", "--toolset", "greetings")
    assert mcp[0]["inputSchema"]["type"] == "object"
    assert run("schema", "export", "--format", "cohere").exit_code == 2


def test_schema_export_default_selection_leaves_hidden_tools_out(greet_home: Path, run: Run) -> None:
    names = {d["function"]["name"] for d in run_json(run, "schema", "export")}
    assert "greet" in names and "secret_greet" not in names
