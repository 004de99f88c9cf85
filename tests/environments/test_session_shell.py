"""The session shell through ``terminal``, for real behind the sandbox: what persists between calls, what a killed
command leaves, ``workdir``, sessions kept apart, and a working directory that never leaves the walls."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes_core import ToolSystem
from hermes_core.environments import environment_for
from hermes_core.testing import processes_gone, sleep_marker, unguarded

MakeSystem = Callable[..., ToolSystem]


def _out(system: ToolSystem, command: str, session_id: str | None = None, **args: object) -> str:
    outcome = system.call_outcome("terminal", {"command": command, **args}, session_id=session_id)
    assert outcome.status == "ok", outcome.result
    return outcome.result


def _lines(system: ToolSystem, command: str, session_id: str | None = None, **args: object) -> list[str]:
    lines = _out(system, command, session_id, **args).splitlines()
    return [line for line in lines if not line.startswith("[")]  # without "[exit code ...]" and notes


def test_directory_variables_functions_and_options_persist_across_a_timed_out_command(
    make_system: MakeSystem, workspace: Path, backend: str
) -> None:
    (workspace / "sub").mkdir()
    system = make_system(config={"sandbox": {"backend": backend, "env": {"FROM_CONFIG": "yes"}}})
    assert _lines(system, "echo $FROM_CONFIG") == ["yes"]
    _out(
        system,
        "cd sub && export GREETING=hello && PLAIN=kept && unset FROM_CONFIG && "
        "shout() { echo \"${1^^}\"; } && set -o pipefail && shopt -s expand_aliases && alias hi='echo hi there'",
    )
    first = _lines(
        system, "pwd; echo $GREETING $PLAIN ${FROM_CONFIG:-unset}; shout loud; set -o | grep pipefail; hi"
    )
    assert first == [
        str((workspace / "sub").resolve()),
        "hello kept unset",
        "LOUD",
        "pipefail       \ton",
        "hi there",
    ]
    timed_out = _out(system, "cd / && export GREETING=changed && sleep 30", timeout=1)
    assert "[timed out after 1s" in timed_out
    assert "as it was before this command" in timed_out
    again = _lines(system, "pwd; echo $GREETING; shout again")
    assert again == [str((workspace / "sub").resolve()), "hello", "AGAIN"]


def test_a_venv_activates_and_deactivates_across_calls(make_system: MakeSystem, workspace: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(workspace / ".venv")], check=True)
    system = make_system()
    before = _lines(system, "command -v python3")
    _out(system, "source .venv/bin/activate")
    inside = _lines(system, "echo $VIRTUAL_ENV; command -v python; python -c 'import sys; print(sys.prefix)'")
    venv = str((workspace / ".venv").resolve())
    assert inside == [venv, f"{venv}/bin/python", venv]
    _out(system, "deactivate")
    after = _lines(
        system, "echo ${VIRTUAL_ENV:-none}; command -v python3; declare -F deactivate || echo gone"
    )
    assert after == ["none", *before, "gone"]
    assert venv not in _out(system, "echo $PATH")


def test_workdir_is_for_one_command_and_relative_to_the_shell(system: ToolSystem, workspace: Path) -> None:
    (workspace / "a" / "b").mkdir(parents=True)
    _out(system, "cd a")
    assert _lines(system, "pwd", workdir="b") == [str((workspace / "a" / "b").resolve())]
    assert _lines(system, "pwd") == [str((workspace / "a").resolve())]  # the session stays where it was
    assert _lines(system, "pwd", workdir="/tmp") == ["/tmp"]
    assert _lines(system, "pwd", cwd=str(workspace)) == [str(workspace.resolve())]  # the older name
    outcome = system.call_outcome("terminal", {"command": "pwd", "workdir": "missing"})
    assert outcome.status == "error" and "not an existing directory" in outcome.result


@pytest.mark.parametrize("guard", ["on", "off"])
def test_a_working_directory_outside_the_workspace_is_refused(
    make_system: MakeSystem, workspace: Path, stage: Path, guard: str
) -> None:
    outside = stage / "outside"
    outside.mkdir()
    (outside / "sentinel.txt").write_text("sentinel\n")
    (workspace / "door").symlink_to(outside)
    system = make_system(
        config={"sandbox": {"read_only": [str(outside)]}}
    )  # visible, but not a place to stay
    if guard == "off":
        unguarded(system)
    for where in ("/etc", str(outside), "door", "/tmp/../etc"):
        outcome = system.call_outcome("terminal", {"command": "pwd; ls", "workdir": where})
        assert outcome.status == "error" and "outside the workspace" in outcome.result, (
            where,
            outcome.result,
        )
    assert (outside / "sentinel.txt").exists()
    looked = _out(system, "cd /etc && pwd")  # a command may look around...
    assert looked.startswith("/etc\n") and "the next command starts in" in looked
    assert _lines(system, "pwd") == [str(workspace.resolve())]  # ...but the session does not stay there
    through_link = _out(system, "cd door && pwd")  # a link in the workspace does not make the outside inside
    assert "the next command starts in" in through_link
    assert _lines(system, "pwd") == [str(workspace.resolve())]


def test_a_forged_state_cannot_move_the_session_out(system: ToolSystem, workspace: Path) -> None:
    unguarded(system)
    # the command drops hermes's EXIT trap and writes a well-formed state of its own on hermes's descriptor
    forged = "trap - EXIT; printf '%s\\0' HERMES-STATE-3 0 /root '' '' '' '' '' '' >&$__hermes_w; exit 0"
    out = _out(system, forged)
    assert "the next command starts in" in out
    assert _lines(system, "pwd") == [str(workspace.resolve())]
    garbage = _out(system, r"printf 'not a state' >&$__hermes_w; exec true")
    assert "could not be read" in garbage
    assert _lines(system, "pwd") == [str(workspace.resolve())]


def test_sessions_are_apart_and_end_with_their_processes(system: ToolSystem) -> None:
    _out(system, "export ONLY_HERE=1; echo mine > /tmp/mine.txt", session_id="s1")
    assert _lines(system, "echo ${ONLY_HERE:-none}; cat /tmp/mine.txt 2>&1 || true", session_id="s2") == [
        "none",
        "cat: /tmp/mine.txt: No such file or directory",
    ]
    assert _lines(system, "echo $ONLY_HERE; cat /tmp/mine.txt", session_id="s1") == ["1", "mine"]
    marker = sleep_marker()
    started = system.call("terminal", {"command": f"sleep {marker}", "background": True}, session_id="s1")
    assert "process_id=" in started
    env = environment_for(_Context(system, "s1"))
    tmp = env.local_path("/tmp")
    assert tmp is not None and (tmp / "mine.txt").exists()
    assert system.close_session("s1")
    assert processes_gone(marker)
    assert not tmp.exists()  # the session's /tmp goes with it


class _Context:
    """What ``environment_for`` needs of a call: the system's host, its workspace and a session id."""

    def __init__(self, system: ToolSystem, session_id: str) -> None:
        self.host = system.host
        self.workspace = system.workspace
        self.session_id = session_id


def test_the_file_tools_and_the_shell_share_the_session_tmp(system: ToolSystem) -> None:
    host_tmp = Path("/tmp/hermes-shared-check.txt")
    assert not host_tmp.exists()
    _out(system, "echo from the shell > /tmp/hermes-shared-check.txt")
    assert "from the shell" in system.call("read_file", {"path": "/tmp/hermes-shared-check.txt"})
    assert system.call("write_file", {"path": "/tmp/from-tool.txt", "content": "from the tool\n"}).startswith(
        "created"
    )
    assert _lines(system, "cat /tmp/from-tool.txt") == ["from the tool"]
    assert not host_tmp.exists() and not Path("/tmp/from-tool.txt").exists()  # the host's /tmp saw nothing


def test_state_does_not_cost_correctness_of_exit_codes_and_stdin(system: ToolSystem) -> None:
    assert _lines(system, "read line; echo got=$?") == ["got=1"]  # stdin stays closed
    assert "[exit code 7;" in _out(system, "exit 7")
    failed = _out(system, "set -e; false; echo never")
    assert "[exit code 1;" in failed and "never" not in failed
    assert "[exit code 0;" in _out(system, "true")  # set -e persisted, and does not trip hermes's own lines
    assert _lines(system, "set -o | grep errexit") == ["errexit        \ton"]
    assert "[exit code 2;" in _out(system, "if then fi")  # a syntax error is the command's, not the shell's


def test_the_environment_keeps_its_state_on_the_host_only(system: ToolSystem) -> None:
    _out(system, "export SECRET_LOOKING_TOKEN=abc")
    env = environment_for(_Context(system, system.session_id))
    assert "SECRET_LOOKING_TOKEN" in env.shell.state.variables  # type: ignore[attr-defined]
    assert "SECRET_LOOKING_TOKEN" not in os.environ
