"""``hermes call``: arguments, the result the model sees, and the exit status of each outcome."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from cli_helpers import POLICY, Run, write_plugin

from hermes_core.cli._call import EXIT_CODES, parse_call_arguments


def test_key_value_arguments_parse_json_values_else_strings() -> None:
    assert parse_call_arguments(["n=3", "flag=true", "name=bob", "list=[1, 2]", "empty=", "eq=a=b"]) == {
        "n": 3,
        "flag": True,
        "name": "bob",
        "list": [1, 2],
        "empty": "",
        "eq": "a=b",
    }
    assert parse_call_arguments(['{"name": "x", "times": 2}']) == {"name": "x", "times": 2}
    assert parse_call_arguments([]) == {}
    for bad in (["novalue"], ["=3"], ["{not json"], ["[1]"]):
        with pytest.raises(click.BadParameter):
            parse_call_arguments(bad)


def test_call_ok_prints_the_result(greet_home: Path, run: Run) -> None:
    result = run("call", "greet", "name=bob", "times=2")
    assert result.exit_code == 0
    assert result.stdout.strip() == "hello bob hello bob"


def test_call_json_argument_and_json_outcome(greet_home: Path, run: Run) -> None:
    result = run("call", "greet", '{"name": "ann"}', "--json")
    assert result.exit_code == 0
    outcome = json.loads(result.stdout)
    assert outcome["status"] == "ok" and outcome["result"] == "hello ann"
    assert outcome["duration_ms"] >= 0 and outcome["error_kind"] is None


def test_call_exit_status_error(greet_home: Path, run: Run) -> None:
    result = run("call", "greet_fail")
    assert result.exit_code == EXIT_CODES["error"] == 1
    assert "out of order" in result.stdout
    assert "call error" in result.stderr
    invalid = run("call", "greet", "times=many", "--json")
    assert invalid.exit_code == 1
    assert json.loads(invalid.stdout)["error_kind"] == "invalid_arguments"
    unknown = run("call", "nope")
    assert unknown.exit_code == 1


def test_call_exit_status_blocked_and_denied(greet_home: Path, run: Run) -> None:
    write_plugin(greet_home, "policy", POLICY)
    blocked = run("call", "greet", "name=mallory")
    assert blocked.exit_code == EXIT_CODES["blocked"] == 3
    assert "mallory is not welcome" in blocked.stdout
    # not a terminal: nobody can approve, so the call is denied (fails closed)
    denied = run("call", "greet", "name=root", "--json")
    assert denied.exit_code == EXIT_CODES["denied"] == 4
    assert json.loads(denied.stdout)["status"] == "denied"
    assert run("call", "greet", "name=eve").exit_code == 0


def test_call_hidden_tool_is_not_run(greet_home: Path, run: Run) -> None:
    result = run("call", "secret_greet", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["status"] == "error"
    assert "psst" not in result.stdout


def test_call_bad_arguments_are_a_usage_error(greet_home: Path, run: Run) -> None:
    result = run("call", "greet", "oops")
    assert result.exit_code == 2
    assert "expected key=value" in result.stderr
    unknown = run("call", "greet", "--toolset", "greeting")
    assert unknown.exit_code == 2 and "unknown toolset 'greeting'" in unknown.stderr


def test_call_toolset_option_limits_what_may_run(greet_home: Path, run: Run) -> None:
    assert run("call", "greet", "--toolset", "greetings").exit_code == 0
    outside = run("call", "greet", "--toolset", "secrets", "--json")
    assert outside.exit_code == 1
    assert json.loads(outside.stdout)["status"] == "error"


def test_call_help_documents_exit_codes(run: Run) -> None:
    result = run("call", "--help")
    assert "0 ok, 1 error, 3 blocked" in result.stdout and "4 denied" in result.stdout


def test_call_refuses_argument_names_the_tool_does_not_take(greet_home: Path, run: Run) -> None:
    typo = run("call", "greet", "nmae=bob")
    assert typo.exit_code == 2
    assert "greet has no argument 'nmae' (did you mean 'name'?)" in typo.stderr
    assert "it takes: name, times" in typo.stderr
    as_json = run("call", "greet", '{"name": "a", "shout": true}')
    assert as_json.exit_code == 2 and "'shout'" in as_json.stderr
    assert run("call", "greet", "name=bob").exit_code == 0


def test_call_reads_arguments_from_stdin_and_files(greet_home: Path, run: Run, tmp_path: Path) -> None:
    piped = run("call", "greet", "-", input='{"name": "stdin", "times": 2}')
    assert piped.exit_code == 0 and piped.stdout.strip() == "hello stdin hello stdin"
    args = tmp_path / "args.json"
    args.write_text('{"name": "file"}')
    from_file = run("call", "greet", f"@{args}")
    assert from_file.exit_code == 0 and from_file.stdout.strip() == "hello file"
    missing = run("call", "greet", f"@{tmp_path / 'nope.json'}")
    assert missing.exit_code == 2 and "cannot read" in missing.stderr
    not_an_object = run("call", "greet", "-", input="[1, 2]")
    assert not_an_object.exit_code == 2 and "from standard input must be an object" in not_an_object.stderr
