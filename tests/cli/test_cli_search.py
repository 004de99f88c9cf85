"""``hermes tools search QUERY``: the selected tools ranked for a task, with whether the model is sent them."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import Run, run_json, write_plugin

CATALOG = Path(__file__).parents[2] / "benchmarks" / "catalog" / "tools.json"

PLUGIN = f"""
import json

from hermes_core import registry

with open({str(CATALOG)!r}, encoding="utf-8") as f:
    TOOLS = [t for t in json.load(f)["tools"] if t["source"]["registry"] != "builtin"]

for tool in TOOLS:
    schema = {{"name": tool["name"], "description": tool["description"], "parameters": tool["parameters"]}}
    registry.register(name=tool["name"], toolset=tool["toolset"].replace("mcp-", "cat-"), schema=schema,
                      handler=lambda **kw: "ok")
"""


def test_search_ranks_the_selection_and_says_what_is_deferred(home: Path, run: Run) -> None:
    write_plugin(home, "catalog", PLUGIN)
    found = run_json(run, "tools", "search", "post", "a", "message", "to", "slack", "--json")
    names = [row["name"] for row in found["tools"]]
    assert names[0] == "slack_post_message" and len(names) == 5
    assert found["tools"][0]["state"] == "deferred"  # 500 tools do not fit the budget
    assert found["searched"] > 500 and found["elapsed_ms"] >= 0
    core = run_json(run, "tools", "search", "read a file from disk", "--json", "-n", "10")
    assert any(row["name"] == "read_file" and row["state"] == "sent" for row in core["tools"])
    only = run_json(run, "tools", "search", "read a file from disk", "--json", "--deferred")
    assert "read_file" not in [row["name"] for row in only["tools"]]


def test_search_plain_output_and_no_match(home: Path, run: Run) -> None:
    result = run("tools", "search", "read", "file", "--toolset", "file")
    assert result.exit_code == 0
    first = result.stdout.splitlines()[0].split("\t")
    assert first[0] == "1" and first[1] == "read_file" and first[3] == "sent"
    nothing = run("tools", "search", "zzqx", "--toolset", "file")
    assert nothing.exit_code == 1 and "No tool matched" in nothing.stderr
    bad = run("tools", "search", "x", "--toolset", "no-such-set")
    assert bad.exit_code == 2 and "no-such-set" in bad.stderr
