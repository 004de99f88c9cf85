"""``hermes plugins doctor``: every kind of problem found, with a fix, and the exit status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import (
    BAD_HOOK_ARGS,
    BROKEN_IMPORT,
    CLASH,
    CURL_GUARD,
    NOT_A_PLUGIN,
    POLICY,
    UNKNOWN_HOOK,
    Run,
    write_plugin,
)

from hermes_core.doctor import import_check
from hermes_core.plugins import PluginRecord


def doctor(run: Run, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    result = run("plugins", "doctor", "--json", *args, env=env)
    return result.exit_code, json.loads(result.stdout)


def problems_of(report: dict[str, Any], plugin: str) -> list[dict[str, str]]:
    return [p for p in report["problems"] if p["plugin"] == plugin]


def test_healthy_plugins_exit_0(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "policy", POLICY)
    code, report = doctor(run, env={"HERMES_TEST_GREET_TOKEN": "t"})
    own = [p for p in report["problems"] if p["plugin"].startswith("dropin:")]
    assert own == []
    plugins = {p["name"]: p for p in report["plugins"]}
    check = plugins["dropin:greet"]["import_check"]
    assert check["ok"] is True and check["ms"] >= 0 and check["skipped"] == ""
    assert plugins["dropin:policy"]["hooks"] == ["pre_tool_call"]
    builtin_errors = [p for p in report["problems"] if p["severity"] == "error"]
    assert report["ok"] is (builtin_errors == [])
    assert code == (0 if report["ok"] else 1)


def test_missing_env_is_a_warning_with_the_variable_named(greet_home: Path, run: Run) -> None:
    _, report = doctor(run)
    [problem] = problems_of(report, "dropin:greet")
    assert problem["severity"] == "warning" and problem["check"] == "check"
    assert "HERMES_TEST_GREET_TOKEN" in problem["message"]
    assert problem["fix"].startswith("set HERMES_TEST_GREET_TOKEN")
    strict_code, strict = doctor(run, "--strict")
    assert strict_code == 1 and strict["ok"] is False


def test_broken_import_fails_with_the_error_and_a_fix(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "broken", BROKEN_IMPORT)
    code, report = doctor(run, env={"HERMES_TEST_GREET_TOKEN": "t"})
    assert code == 1 and report["ok"] is False
    [problem] = problems_of(report, "dropin:broken")
    assert problem["severity"] == "error" and problem["check"] == "import"
    assert "ModuleNotFoundError" in problem["message"] and "hermes_no_such_module_xyz" in problem["message"]
    assert "hermes_no_such_module_xyz" in problem["fix"] and "-p no:broken" in problem["fix"]
    row = next(p for p in report["plugins"] if p["name"] == "dropin:broken")
    assert row["import_check"]["ok"] is False and row["problems"] == 1


def test_hook_problems_unknown_hook_and_bad_arguments(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "typo", UNKNOWN_HOOK)
    write_plugin(greet_home, "badargs", BAD_HOOK_ARGS)
    code, report = doctor(run)
    assert code == 1
    [typo] = problems_of(report, "dropin:typo")
    assert typo["check"] == "hooks" and "'pre_tool_cal'" in typo["message"]
    assert "pre_tool_call" in typo["fix"]
    [badargs] = problems_of(report, "dropin:badargs")
    assert badargs["check"] == "hooks" and "mood" in badargs["message"]


def test_clash_is_reported_against_the_second_plugin(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "zclash", CLASH)
    code, report = doctor(run)
    assert code == 1
    [clash] = problems_of(report, "dropin:zclash")
    assert clash["check"] == "clash" and "'greet'" in clash["message"]
    assert "rename" in clash["fix"]


def test_provider_and_schema_problems(home: Path, run: Run) -> None:
    write_plugin(
        home,
        "dotted",
        """
        from hermes_core import registry

        registry.register(
            name="weather.now",
            toolset="dotted",
            schema={"name": "weather.now", "description": "Dots are fine for MCP only.",
                    "parameters": {"type": "object", "properties": {}}},
            handler=lambda: "sunny",
        )
        """,
    )
    write_plugin(
        home,
        "badschema",
        """
        from hermes_core import registry

        registry.register(
            name="bad_schema",
            toolset="bad",
            schema={"name": "bad_schema", "parameters": {"type": "object", "properties": {"x": {"type": 5}}}},
            handler=lambda: "",
        )
        """,
    )
    code, report = doctor(run)
    assert code == 1
    dotted = problems_of(report, "dropin:dotted")
    assert {p["check"] for p in dotted} == {"provider"}
    assert any("openai" in p["message"] for p in dotted) and not any("mcp" in p["message"] for p in dotted)
    [bad] = problems_of(report, "dropin:badschema")
    assert bad["severity"] == "error" and bad["check"] in ("schema", "import")
    assert "bad_schema" in bad["message"]


def test_blocked_and_skipped_files_are_reported_but_not_imported(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "broken", BROKEN_IMPORT)
    write_plugin(greet_home, "notes", NOT_A_PLUGIN)
    result = run("-p", "no:broken", "plugins", "doctor", "--json")
    code, report = result.exit_code, json.loads(result.stdout)
    broken = problems_of(report, "dropin:broken")
    assert [p["check"] for p in broken] == ["blocked"] and broken[0]["severity"] == "info"
    row = next(p for p in report["plugins"] if p["name"] == "dropin:broken")
    assert row["import_check"]["skipped"] == "blocked"
    [notes] = problems_of(report, "dropin:notes")
    assert notes["severity"] == "warning" and "never imported" in notes["message"]
    assert code == (0 if report["ok"] else 1)


def test_plain_output_one_line_per_problem(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "broken", BROKEN_IMPORT)
    write_plugin(greet_home, "badargs", BAD_HOOK_ARGS)  # pluggy's message spans several lines
    result = run("plugins", "doctor")
    assert result.exit_code == 1
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    assert all(len(cols) == 5 for cols in lines)
    assert ["error", "dropin:broken", "import"] in [cols[:3] for cols in lines]
    assert ["error", "dropin:badargs", "hooks"] in [cols[:3] for cols in lines]
    assert "problems found" in result.stderr


def test_import_check_times_out_and_reports_exits(tmp_path: Path) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(5)\n")
    record = PluginRecord(name="dropin:slow", source="drop-in", path=str(slow))
    check = import_check(record, timeout=0.5)
    assert check.ok is False and "took over 0.5 s" in (check.error or "")
    leaver = tmp_path / "leaver.py"
    leaver.write_text("import os\nos._exit(3)\n")
    check = import_check(PluginRecord(name="dropin:leaver", source="drop-in", path=str(leaver)))
    assert check.ok is False and "ended the interpreter" in (check.error or "")
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nsys.exit('bye')\n")
    check = import_check(PluginRecord(name="dropin:exits", source="drop-in", path=str(exits)))
    assert check.ok is False and check.error == "SystemExit: bye"


MISMATCHED = """
from hermes_core import registry

def needs_city(city, units):        # 'units' is optional in the schema but has no default here
    return city

def strict(a):                       # the schema also offers 'b', which this handler cannot take
    return a

def legacy(args, **kw):              # the reference style: one dict (detected, not a problem)
    return args["a"]

props = {"a": {"type": "integer"}, "b": {"type": "integer"}}
registry.register(name="needs_city", toolset="sig", handler=needs_city,
                  schema={"name": "needs_city", "parameters": {"type": "object", "required": ["city"],
                          "properties": {"city": {"type": "string"}, "units": {"type": "string"}}}})
registry.register(name="strict", toolset="sig", handler=strict,
                  schema={"name": "strict", "parameters": {"type": "object", "properties": props}})
registry.register(name="legacy", toolset="sig", handler=legacy,
                  schema={"name": "legacy", "parameters": {"type": "object", "properties": props}})
"""


def test_handler_signatures_are_checked_against_their_schemas(home: Path, run: Run) -> None:
    write_plugin(home, "sig", MISMATCHED)
    code, report = doctor(run)
    assert code == 1
    found = {p["message"] for p in problems_of(report, "dropin:sig") if p["check"] == "signature"}
    assert any("'needs_city'" in m and "'units' has no default" in m for m in found)
    assert any("'strict'" in m and "property 'b' is not a parameter" in m for m in found)
    assert any(
        "'strict'" in m and "'a' has no default but the schema does not require it" in m for m in found
    )
    assert not any("'legacy'" in m for m in found)
    assert len(found) == 3
    ok = run("call", "legacy", "a=4")
    assert ok.exit_code == 0 and ok.stdout.strip() == "4"


def test_a_fresh_install_is_healthy_even_in_strict_mode(home: Path, run: Run) -> None:
    code, report = doctor(run, "--strict")
    assert code == 0 and report["ok"] is True
    [designed] = [p for p in report["problems"] if "by design" in p["message"]]  # one line for all of them
    assert (
        designed["severity"] == "info" and "clarify" in designed["message"] and "--verbose" in designed["fix"]
    )
    _, verbose = doctor(run, "--strict", "--verbose")
    listed = [p for p in verbose["problems"] if "by design" in p["message"]]
    assert len(listed) > 1 and all(p["severity"] == "info" for p in listed)
    [clarify] = [p for p in listed if "'clarify'" in p["message"]]
    assert "ask" in clarify["message"]  # each with its reason


def test_each_problem_is_printed_once(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "broken", BROKEN_IMPORT)
    write_plugin(greet_home, "zclash", CLASH)
    result = run("plugins", "doctor")
    out = result.stdout + result.stderr
    assert out.count("hermes_no_such_module_xyz'") == 2  # the problem line: message and fix, nothing more
    assert out.count("clashes with") == 1
    assert "hermes: error" not in result.stderr  # the load-time log lines are the report's job here


def test_unknown_toolsets_in_disabled_are_warnings(home: Path, run: Run) -> None:
    (home / "config.toml").write_text('[toolsets]\ndisabled = ["mattermost", "memroy"]\n')
    listed = run("tools", "list")
    assert listed.exit_code == 0 and "read_file" in listed.stdout
    called = run("call", "read_file", "path=nothing.txt")
    assert called.exit_code != 2 and "read_file" not in called.stderr  # the call ran: the config is fine
    _, report = doctor(run)
    warnings = [p for p in report["problems"] if p["plugin"] == "config" and p["check"] == "toolsets"]
    assert {p["severity"] for p in warnings} == {"warning"} and len(warnings) == 2
    assert any("'mattermost'" in p["message"] for p in warnings)
    assert any("did you mean 'memory'" in p["message"] for p in warnings)
    (home / "config.toml").write_text('[toolsets]\nenabled = ["mattermost"]\n')
    broken = run("tools", "list")
    assert broken.exit_code == 2 and "mattermost" in broken.stderr  # enabling one still fails loudly


def test_a_clash_keeps_the_blocking_hook_and_the_stderr_hint_is_the_doctors_fix(home: Path, run: Run) -> None:
    """The case of the issue: a policy plugin also registers a built-in's name. It loses that tool alone: its
    pre_tool_call still blocks curl, and the hint on stderr is the fix the doctor gives."""
    write_plugin(home, "guard", CURL_GUARD)
    blocked = run("call", "terminal", "command=curl https://example.invalid/")
    assert blocked.exit_code == 3 and "curl is not allowed here" in blocked.stdout
    hint = next(line for line in blocked.stderr.splitlines() if "lost its tool 'write_file'" in line)
    code, report = doctor(run)
    assert code == 1
    [clash] = problems_of(report, "dropin:guard")
    assert clash["severity"] == "error" and clash["check"] == "clash"
    assert hint.endswith(f"fix: {clash['fix']}")
    rows = {p["name"]: p for p in report["plugins"]}
    assert rows["dropin:guard"]["status"] == "loaded" and rows["dropin:guard"]["hooks"] == ["pre_tool_call"]


def test_an_ill_typed_plugin_setting_is_an_error_with_the_key_to_fix(home: Path, run: Run) -> None:
    write_plugin(
        home,
        "paced",
        """
        from hermes_core import hookimpl

        @hookimpl
        def plugin_config_schema():
            return {"paced": {"type": "object", "properties": {"per_minute": {"type": "number"}}}}

        @hookimpl
        def pre_tool_call(name, context):
            return None
        """,
    )
    (home / "config.toml").write_text('[plugins.paced]\nper_minute = "fast"\n')
    code, report = doctor(run)
    assert code == 1
    [problem] = [p for p in problems_of(report, "dropin:paced") if p["check"] == "config"]
    assert problem["severity"] == "error" and 'per_minute: expected number, got "fast"' in problem["message"]
    assert f"correct plugins.paced.per_minute in {home / 'config.toml'}" in problem["fix"]
    assert "hermes config set plugins.paced.per_minute VALUE" in problem["fix"]
    run("config", "set", "plugins.paced.per_minute", "60")
    _, fixed = doctor(run)
    assert not [p for p in problems_of(fixed, "dropin:paced") if p["check"] == "config"]
