"""The ``container`` and ``ssh`` kinds for real (podman with a local Debian image; a private sshd): session state
across ``terminal`` calls, a REPL on a pty through ``process``, file tools and ``execute_code`` acting there and
not on the host, timed-out commands and killed processes ended on the other side with their whole tree."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import container_config  # type: ignore[import-not-found]

from hermes_core import ToolSystem
from hermes_core.environments import Environment, environment_for
from hermes_core.testing import processes_gone, processes_with_arg, sleep_marker

Make = Callable[..., ToolSystem]
pytestmark = pytest.mark.timeout(900)  # the first test of a fresh machine builds the Debian image (~1 min)


@pytest.fixture(params=["podman", "docker", "ssh"])
def remote(request: pytest.FixtureRequest, make_remote: Make) -> ToolSystem:
    """A tool system whose sessions run in a container (podman, or Docker), or on the test sshd."""
    if request.param == "podman":
        return make_remote(container_config(request.getfixturevalue("debian_image")))
    if request.param == "docker":
        engine = request.getfixturevalue("docker")
        return make_remote(container_config(request.getfixturevalue("debian_image"), engine=engine))
    sshd = request.getfixturevalue("sshd")
    return make_remote(sshd.config(request.getfixturevalue("remote_workspace")))


def _env(system: ToolSystem) -> Environment:
    """The environment of the system's own session (what its calls use)."""
    owner = SimpleNamespace(host=system, workspace=system.workspace, session_id=system.session_id)
    return environment_for(owner)


def _ok(system: ToolSystem, tool: str, **args: Any) -> str:
    outcome = system.call_outcome(tool, args)
    assert outcome.status == "ok", outcome.result
    return outcome.result


def _lines(result: str) -> list[str]:
    return [line for line in result.splitlines() if not line.startswith("[")]


ACTIVATE = """VIRTUAL_ENV="$PWD/venv"; export VIRTUAL_ENV
_OLD_PATH="$PATH"; PATH="$VIRTUAL_ENV/bin:$PATH"; export PATH
deactivate () { PATH="$_OLD_PATH"; export PATH; unset VIRTUAL_ENV _OLD_PATH; unset -f deactivate; }
"""


def test_the_session_shell_remembers_across_calls(remote: ToolSystem) -> None:
    workspace = _env(remote).workspace
    _ok(remote, "write_file", path="venv/bin/activate", content=ACTIVATE)
    first = _ok(
        remote, "terminal", command="mkdir -p sub && cd sub && export X=42 Y=gone && shopt -s extglob"
    )
    assert "[exit code 0" in first
    assert _lines(_ok(remote, "terminal", command="pwd; echo $X $Y; shopt -q extglob && echo on")) == [
        f"{workspace}/sub",
        "42 gone",
        "on",
    ]
    timed = _ok(remote, "terminal", command="cd /; export X=lost; sleep 30", timeout=1)
    assert "timed out after 1s" in timed and "as it was before this command" in timed
    assert _lines(_ok(remote, "terminal", command="unset Y; pwd; echo $X")) == [f"{workspace}/sub", "42"]
    assert _lines(_ok(remote, "terminal", command="echo Y=${Y-unset}")) == ["Y=unset"]
    _ok(remote, "terminal", command="cd .. && source venv/bin/activate")
    active = _lines(
        _ok(remote, "terminal", command='echo $VIRTUAL_ENV; echo "${PATH%%:*}"; type -t deactivate')
    )
    assert active == [f"{workspace}/venv", f"{workspace}/venv/bin", "function"]
    _ok(remote, "terminal", command="deactivate")
    gone = _lines(
        _ok(remote, "terminal", command='echo "venv=${VIRTUAL_ENV-}"; type -t deactivate || echo none')
    )
    assert gone == ["venv=", "none"]
    here = _lines(_ok(remote, "terminal", command="pwd", workdir="sub"))
    assert here == [f"{workspace}/sub"]
    assert _lines(_ok(remote, "terminal", command="pwd")) == [workspace]  # workdir was for that command only


def _start(system: ToolSystem, command: str, **args: Any) -> str:
    out = _ok(system, "terminal", command=command, background=True, **args)
    found = re.search(r"process_id=(\S+)", out)
    assert found, out
    return found.group(1)


def _status(result: str) -> dict[str, Any]:
    line = next(line for line in result.splitlines() if line.startswith("{"))
    found: dict[str, Any] = json.loads(line)
    return found


def _until(check: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_a_python_repl_on_a_pty_there(remote: ToolSystem) -> None:
    pid = _start(remote, "python3 -q", pty=True)
    _until(lambda: ">>>" in _ok(remote, "process", action="log", process_id=pid))
    answer = _ok(remote, "process", action="submit", process_id=pid, data="2+2")
    _until(
        lambda: (
            "4"
            in [
                x.strip()
                for x in (answer + _ok(remote, "process", action="log", process_id=pid)).splitlines()
            ]
        )
    )
    tty = _ok(
        remote,
        "process",
        action="submit",
        process_id=pid,
        data="import os; print(os.isatty(0), os.getpid() > 1)",
    )
    _until(lambda: "True True" in tty + _ok(remote, "process", action="log", process_id=pid))
    closed = _ok(remote, "process", action="close", process_id=pid)
    if _status(closed)["status"] == "running":
        closed = _ok(remote, "process", action="wait", process_id=pid, timeout=15)
    assert _status(closed)["status"] == "exited" and _status(closed)["exit_code"] == 0


def test_watch_patterns_wake_on_a_line_there(remote: ToolSystem) -> None:
    pid = _start(
        remote, "sleep 0.5; echo server listening on 8080; sleep 30", watch_patterns=["listening on"]
    )
    woke = _ok(remote, "process", action="wait", process_id=pid, timeout=20)
    assert woke.startswith("a watched line appeared") and "listening on 8080" in woke
    killed = _ok(remote, "process", action="kill", process_id=pid)
    assert _status(killed)["status"] != "running"


def test_files_and_execute_code_act_there_not_on_the_host(remote: ToolSystem, tmp_path: Path) -> None:
    host_workspace = tmp_path / "host-ws"
    env = _env(remote)
    # the container's /tmp is its own; the ssh host's workspace is its own folder (this sshd runs on this machine,
    # so its /tmp is the host's)
    there = f"/tmp/only-there-{time.monotonic_ns()}.txt" if env.kind == "container" else "only-there.txt"
    on_host = Path(there) if env.kind == "container" else host_workspace / there
    assert "created" in _ok(remote, "write_file", path=there, content="written there\n")
    assert not on_host.exists()  # not on the host's disk
    assert "written there" in _ok(remote, "terminal", command=f"cat {there}")
    if env.kind == "ssh":  # and the reverse: a file of the host's workspace is not there
        (host_workspace / "host-only.txt").write_text("host\n")
        missing = remote.call_outcome("read_file", {"path": "host-only.txt"})
        assert missing.status != "ok" and "host\n" not in missing.result
    else:  # and the reverse: the host's own files are not in the container
        host_file = Path("/var/tmp", f"hermes-host-{time.monotonic_ns()}.txt")
        host_file.write_text("host secret\n")
        try:
            unseen = remote.call_outcome("read_file", {"path": str(host_file)})
            assert unseen.status != "ok" and "host secret" not in unseen.result
            assert "host secret" not in _ok(remote, "terminal", command=f"cat {host_file} 2>&1 || true")
        finally:
            host_file.unlink()
    _ok(remote, "write_file", path="notes.txt", content="alpha\nbeta\n")
    assert _ok(remote, "patch", path="notes.txt", old_string="beta", new_string="gamma").startswith("patched")
    assert "notes.txt:2:gamma" in _ok(remote, "search_files", pattern="gamma", path=".")
    code = (
        "import os, platform\n"
        f"print(open('{there}').read().strip(), os.getcwd())\n"
        "from hermes_tools import read_file\n"
        "print(read_file(path='notes.txt'))\n"
    )
    result = json.loads(_ok(remote, "execute_code", code=code))
    assert result["exit_code"] == 0, result
    assert result["stdout"].startswith(f"written there {env.workspace}\n")
    assert "2|gamma" in result["stdout"] and result["tool_calls"][0]["tool"] == "read_file"


def test_a_timed_out_command_and_a_killed_process_end_there_with_their_children(remote: ToolSystem) -> None:
    marker, child = sleep_marker(), sleep_marker()
    timed = _ok(remote, "terminal", command=f"sleep {child} & sleep {marker}", timeout=2)
    assert "timed out after 2s" in timed
    assert processes_gone(marker, 10) and processes_gone(child, 10)  # ended there, not just the local client
    left = sleep_marker()
    done = _ok(remote, "terminal", command=f"sleep {left} & echo started")
    assert "background children left by the command were killed" in done
    assert processes_gone(left, 10)
    background = sleep_marker()
    pid = _start(remote, f"sleep {background} & sleep {background}")
    _until(lambda: len(processes_with_arg(background)) == 2)
    killed = _ok(remote, "process", action="kill", process_id=pid)
    assert "terminated" in killed or "killed" in killed
    assert processes_gone(background, 10)
