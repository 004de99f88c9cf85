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


def test_key_value_arguments_follow_the_tools_schema() -> None:
    parameters = {
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "timeout": {"type": "integer"},
            "background": {"type": "boolean"},
            "limit": {"type": ["integer", "null"]},
            "mode": {"enum": ["fast", "slow"]},
            "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }
    args = ["command=true", "timeout=60", "background=false", "limit=null", "mode=fast", "id=7", 'tags=["a"]']
    assert parse_call_arguments(args, parameters) == {
        "command": "true",  # a string property keeps the text: the command `true`, not the boolean
        "timeout": 60,
        "background": False,
        "limit": None,
        "mode": "fast",
        "id": 7,  # a string or an integer: JSON that is one of the others wins
        "tags": ["a"],
    }
    assert parse_call_arguments(["command=[1, 2]", "other=3"], parameters) == {
        "command": "[1, 2]",
        "other": 3,
    }


def test_call_converts_key_value_by_schema_end_to_end(home: Path, run: Run) -> None:
    result = run("call", "terminal", "command=true", "--json")
    outcome = json.loads(result.stdout)
    assert (result.exit_code, outcome["status"]) == (0, "ok"), (
        outcome
    )  # `true` ran: no "expected string, got true"


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


CRASH = """
from hermes_core import registry

def crash() -> str:
    raise ValueError("the upstream said no to key sk-ant-api03-" + "Q" * 90)

registry.register(
    name="crash", toolset="crash",
    schema={"name": "crash", "description": "Always crashes.", "parameters": {"type": "object", "properties": {}}},
    handler=crash,
)
"""


def test_the_log_the_error_message_points_to_exists_and_holds_the_traceback(home: Path, run: Run) -> None:
    write_plugin(home, "crash", CRASH)
    log = Path(run("config", "path").stderr.split("# log: ")[1].splitlines()[0])
    assert log == home / "data" / "logs" / "hermes.log"
    result = run("call", "crash")
    error_id = json.loads(result.stdout)["error_id"]
    assert "the details are in the log" in result.stdout and "sk-ant" not in result.stdout
    assert f"hermes: error id {error_id}: the details are in {log}" in result.stderr
    text = log.read_text("utf-8")
    assert f"(error id {error_id})" in text and "Traceback" in text and "ValueError" in text
    assert "Q" * 40 not in text  # the secret in the exception is redacted in the log too
    assert log.parent.stat().st_mode & 0o077 == 0  # the log folder is this user's alone
