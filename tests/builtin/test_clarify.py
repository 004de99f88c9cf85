"""``clarify`` through ``ToolSystem.call`` with a host callback, and the CLI's terminal prompt."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from hermes_core import ToolSystem

MakeSystem = Callable[..., ToolSystem]


def test_open_and_multiple_choice_questions_reach_the_callback(make_builtin_system: MakeSystem) -> None:
    asked: list[tuple[str, Sequence[str] | None]] = []

    def ask(question: str, choices: Sequence[str] | None) -> str:
        asked.append((question, choices))
        return "  Postgres  " if choices else "call it hermes"

    with make_builtin_system(ask_user=ask) as system:
        assert system.call("clarify", {"question": "Name of the project?"}) == "User answered: call it hermes"
        out = system.call("clarify", {"question": "Which DB?", "choices": ["SQLite", "Postgres"]})
        assert out == "User answered: Postgres"
    assert asked == [("Name of the project?", None), ("Which DB?", ["SQLite", "Postgres"])]


def test_without_a_callback_the_tool_is_hidden(builtin_system: ToolSystem) -> None:
    assert "clarify" not in [d["function"]["name"] for d in builtin_system.definitions()]
    assert "cannot ask the user" in builtin_system.hidden()["clarify"]
    outcome = builtin_system.call_outcome("clarify", {"question": "Proceed?"})
    assert outcome.status == "error" and outcome.error_kind == "unknown_tool"
    assert "not available right now" in outcome.result


def test_empty_and_huge_answers(make_builtin_system: MakeSystem) -> None:
    answers = iter(["   ", "z" * 10_000])
    with make_builtin_system(ask_user=lambda q, c: next(answers)) as system:
        assert system.call("clarify", {"question": "?"}) == "The user gave no answer."
        out = system.call("clarify", {"question": "?"})
    assert out.endswith("…(cut)") and len(out) < 4_100


@pytest.mark.parametrize(
    "args",
    [
        {"question": ""},
        {"question": "q", "choices": [f"c{i}" for i in range(9)]},
        {"question": "q", "choices": [""]},
        {"choices": ["a"]},
        {"question": "x" * 2001},
    ],
)
def test_broken_arguments_never_reach_the_user(make_builtin_system: MakeSystem, args: dict[str, Any]) -> None:
    asked: list[str] = []
    with make_builtin_system(ask_user=lambda q, c: asked.append(q) or "yes") as system:
        outcome = system.call_outcome("clarify", args)
    assert outcome.error_kind == "invalid_arguments"
    assert asked == []


def test_duplicate_choices_are_refused(make_builtin_system: MakeSystem) -> None:
    with make_builtin_system(ask_user=lambda q, c: "a") as system:
        outcome = system.call_outcome("clarify", {"question": "q", "choices": ["a", " a "]})
    assert outcome.status == "error" and "duplicates" in outcome.result


_TERMINAL = (
    "import sys\n"
    "from hermes_builtin.tools.work.clarify import terminal_ask_user\n"
    "choices = sys.argv[1:] or None\n"
    "print('ANSWER=' + repr(terminal_ask_user('Pick one', choices)))\n"
)


@pytest.mark.parametrize(
    ("stdin", "choices", "expected"),
    [
        ("2\n", ["red", "green"], "'green'"),
        ("blue-ish\n", ["red", "green"], "'blue-ish'"),
        ("7\n", ["red", "green"], "'7'"),
        ("an open answer\n", [], "'an open answer'"),
        ("", ["red"], "''"),
    ],
)
def test_terminal_prompt_in_a_real_process(stdin: str, choices: list[str], expected: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _TERMINAL, *choices], input=stdin, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    assert "? Pick one" in proc.stdout
    for i, choice in enumerate(choices, 1):
        assert f"  {i}. {choice}" in proc.stdout
    assert proc.stdout.rstrip().endswith(f"ANSWER={expected}")
