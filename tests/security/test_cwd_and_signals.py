"""The guard judges a command where it runs (its ``cwd`` and every ``cd``), and signalling a process the
command did not start needs approval (issue 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.security import classify_command

WS = "/work/project"


@pytest.mark.parametrize(
    ("command", "cwd"),
    [
        ("rm -rf *", "/usr"),
        ("rm -rf .", "/etc"),
        ("find . -delete", "/usr/lib"),
        ("rm -rf ../*", "/usr/share"),
        ("cd lib && rm -rf *", "/usr"),
    ],
)
def test_relative_paths_are_judged_from_the_cwd(command: str, cwd: str) -> None:
    assert not classify_command(command, workspace=WS).dangerous
    verdict = classify_command(command, workspace=WS, cwd=cwd)
    assert verdict.dangerous, (command, cwd)


def test_a_cwd_inside_the_workspace_changes_nothing() -> None:
    assert not classify_command("rm -rf *", workspace=WS, cwd=WS + "/build").dangerous
    assert not classify_command("rm -rf build", workspace=WS, cwd=WS).dangerous


@pytest.mark.parametrize(
    "command",
    [
        "kill -9 $PPID",
        "kill -STOP $PPID",
        "kill 4242",
        "kill -s TERM 4242",
        "kill $(pgrep -f server)",
        "kill $(cat server.pid)",
        "pkill -f uvicorn",
        "pkill -9 python",
        "killall node",
        "sudo kill -HUP 1234",
        "ps aux | grep app | awk '{print $2}' | xargs kill -9",
        "p=$!; p=99; kill $p",
    ],
)
def test_signalling_a_process_it_did_not_start_is_dangerous(command: str) -> None:
    verdict = classify_command(command, workspace=WS)
    assert (verdict.dangerous and "signal_process" in verdict.categories) or "kill_all" in verdict.categories


@pytest.mark.parametrize(
    "command",
    [
        "sleep 30 & kill $!",
        "sleep 30 & pid=$!; sleep 1; kill -TERM $pid; wait $pid",
        "make serve & kill %1",
        "kill -- -$$",
        "kill $$",
        "pkill -P $$",
        "kill -0 4242",
        "kill -l",
        "timeout -s KILL 5 make test",
    ],
)
def test_signalling_its_own_processes_is_ordinary(command: str) -> None:
    verdict = classify_command(command, workspace=WS)
    assert not verdict.dangerous, verdict.reasons


def test_terminal_judges_the_command_in_its_cwd(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ToolSystem.load(
        load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin], workspace=workspace
    ) as system:
        outcome = system.call_outcome("terminal", {"command": "rm -rf hermes-test-no-such-*", "cwd": "/usr"})
        assert outcome.status == "denied" and "/usr" in outcome.result
        assert system.call_outcome("terminal", {"command": "kill -9 $PPID"}).status == "denied"
        assert system.call_outcome("terminal", {"command": "sleep 5 & kill $!; echo ok"}).status == "ok"
