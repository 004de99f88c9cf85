"""``terminal`` and ``process`` through ``ToolSystem.call``: real shells, process groups, hostile commands."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_builtin.tools.execution import terminal
from hermes_core import ToolSystem
from hermes_core.testing import processes_gone, processes_with_arg, sleep_marker

MakeSystem = Callable[..., ToolSystem]

# every test runs with a fake HOME whose dotfiles are guarded
pytestmark = pytest.mark.usefixtures("fake_home")


def _settings(**settings: Any) -> dict[str, Any]:
    """A config giving the terminal tools ``settings``."""
    return {"plugins": {"terminal": settings}}


def test_runs_in_the_workspace_with_exit_code_and_stderr(builtin_system: ToolSystem, workspace: Path) -> None:
    out = builtin_system.call("terminal", {"command": "pwd; echo oops >&2; exit 3"})
    lines = out.splitlines()
    assert lines[0] == str(workspace.resolve())
    assert lines[1] == "oops"
    assert lines[2].startswith("[exit code 3; ")
    (workspace / "sub").mkdir()
    assert builtin_system.call("terminal", {"command": "pwd", "cwd": "sub"}).splitlines()[0] == str(
        (workspace / "sub").resolve()
    )
    outcome = builtin_system.call_outcome("terminal", {"command": "pwd", "cwd": "missing"})
    assert outcome.status == "error" and "not an existing directory" in outcome.result


def test_stdin_is_closed_and_empty_commands_are_refused(builtin_system: ToolSystem) -> None:
    out = builtin_system.call("terminal", {"command": "read line; echo got=$?", "timeout": 5})
    assert out.startswith("got=1")
    assert builtin_system.call_outcome("terminal", {"command": "   "}).status == "error"
    outcome = builtin_system.call_outcome("terminal", {"command": "echo " + "x" * 200_000})
    assert outcome.status == "error" and "script file" in outcome.result


def test_the_environment_is_an_allow_list_plus_what_config_passes(
    make_builtin_system: MakeSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_API_KEY", "sk-should-not-leak-1")
    monkeypatch.setenv("OPENAI_ORG", "org-should-not-leak-2")
    monkeypatch.setenv("DB_PASSWORD", "pw-should-not-leak-3")
    monkeypatch.setenv("DB_CONN", "postgres://u:should-not-leak-4@db/x")  # no secret-looking name
    monkeypatch.setenv("HTTPS_PROXY", "http://user:should-not-leak-5@proxy:3128")
    monkeypatch.setenv("PLAIN_SETTING", "visible-value")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    s = make_builtin_system()
    out = s.call("terminal", {"command": "env", "env": {"EXTRA_FLAG": "on"}})
    assert "should-not-leak" not in out
    assert "PLAIN_SETTING" not in out  # not passed unless the configuration says so
    assert "LC_ALL=C.UTF-8" in out and "PATH=" in out
    assert "EXTRA_FLAG=on" in out
    assert "GIT_TERMINAL_PROMPT=0" in out
    configured = make_builtin_system(
        config={"sandbox": {"pass_env": ["PLAIN_SETTING"], "env": {"FROM_CONFIG": "yes"}}}
    )
    out = configured.call("terminal", {"command": "env"})
    assert "PLAIN_SETTING=visible-value" in out and "FROM_CONFIG=yes" in out
    assert "should-not-leak" not in out


def test_timeout_kills_the_whole_process_tree(builtin_system: ToolSystem) -> None:
    child, detached = sleep_marker(), sleep_marker()
    start = time.monotonic()
    out = builtin_system.call(
        "terminal", {"command": f"sleep {child} & setsid sleep {detached} & sleep 30", "timeout": 1}
    )
    assert time.monotonic() - start < 6
    assert "timed out after 1s: the command and its children were terminated (SIGTERM)" in out
    assert processes_gone(child) and processes_gone(detached)


def test_a_process_ignoring_sigterm_is_killed(builtin_system: ToolSystem) -> None:
    start = time.monotonic()
    out = builtin_system.call("terminal", {"command": "trap '' TERM; sleep 30", "timeout": 1})
    assert "timed out after 1s: the command and its children were killed (SIGTERM, then SIGKILL)" in out
    assert time.monotonic() - start < 8


def test_children_left_behind_by_a_foreground_command_are_killed(builtin_system: ToolSystem) -> None:
    child, detached = sleep_marker(), sleep_marker()
    out = builtin_system.call(
        "terminal", {"command": f"sleep {child} & setsid sleep {detached} & echo started"}
    )
    assert out.startswith("started")
    assert processes_gone(child) and processes_gone(detached)


def test_output_floods_are_capped_head_and_tail(make_builtin_system: MakeSystem) -> None:
    s = make_builtin_system(config=_settings(max_output_chars=10_000))
    start = time.monotonic()
    out = s.call("terminal", {"command": "echo FIRST; yes line | head -c 50000000; echo; echo LAST"})
    assert time.monotonic() - start < 10
    assert out.startswith("FIRST\n")
    assert "LAST\n[exit code 0" in out
    assert "bytes of output omitted" in out
    assert len(out) < 12_000
    out = s.call("terminal", {"command": "yes", "timeout": 1})
    assert "timed out" in out and len(out) < 12_000


def test_fork_loops_are_refused_and_spawned_children_are_killed_on_timeout(
    builtin_system: ToolSystem, workspace: Path
) -> None:
    endless = builtin_system.call_outcome(
        "terminal", {"command": "while true; do sleep 60 & done", "timeout": 1}
    )
    assert endless.status == "denied" and "fork_bomb" in endless.result  # never even started
    spawned = sleep_marker()
    out = builtin_system.call(
        "terminal",
        {"command": f"for i in $(seq 300); do sleep {spawned} & done; sleep 60", "timeout": 1},
    )
    assert "timed out" in out
    assert processes_gone(spawned, 5)


def test_unbounded_allocation_hits_the_memory_limit(make_builtin_system: MakeSystem) -> None:
    s = make_builtin_system(config=_settings(max_memory_mb=256))
    code = "x = []\nwhile True: x.append(bytearray(16 * 1024 * 1024))"
    out = s.call("terminal", {"command": f"{sys.executable} -c '{code}'", "timeout": 30})
    assert "MemoryError" in out
    assert "[exit code 1;" in out


def test_dangerous_commands_are_denied_without_an_approver(
    builtin_system: ToolSystem, workspace: Path
) -> None:
    outcome = builtin_system.call_outcome(
        "terminal", {"command": "mkfs.ext4 /dev/hermes-test-no-such-device"}
    )
    assert outcome.status == "denied"


def test_redirects_into_guarded_files_are_denied(
    builtin_system: ToolSystem, workspace: Path, fake_home: Path
) -> None:
    target = fake_home / ".bashrc"
    commands = (
        "echo pwned > ~/.bashrc",
        'echo pwned | tee -a "$HOME/.bashrc"',
        f"cd /; echo x >> '{target}'",
        "cd ..; echo x > user/.bashrc",
    )
    for command in commands:
        outcome = builtin_system.call_outcome("terminal", {"command": command})
        assert outcome.status == "denied", command
        assert not target.exists()
    outcome = builtin_system.call_outcome(
        "terminal", {"command": "echo fine > inside.txt 2>/dev/null", "cwd": "."}
    )
    assert outcome.status == "ok"
    assert (workspace / "inside.txt").read_text() == "fine\n"


def test_write_targets_extraction() -> None:
    assert terminal.write_targets("a > out.txt 2>&1 | tee -a log.txt; b >> /dev/null; c &> all.txt") == [
        "out.txt",
        "log.txt",
        "all.txt",
    ]
    assert terminal.write_targets("echo $(ls > inner.txt)") == ["inner.txt"]
    assert terminal.write_targets("cat < in.txt; echo 'a > b'") == []
    # broken syntax falls back to a plain tokenizer
    assert terminal.write_targets("echo ( > x.txt") == ["x.txt"]
    assert terminal.scan_command("cd build && make > log.txt; pushd ~/x; cd") == (
        ["log.txt"],
        ["build", "~/x", "~"],
    )


def test_writes_after_an_unfollowable_cd_need_approval(builtin_system: ToolSystem, workspace: Path) -> None:
    outcome = builtin_system.call_outcome("terminal", {"command": 'cd "$(mktemp -d)"; echo x > out.txt'})
    assert outcome.status == "denied"
    assert (
        builtin_system.call_outcome("terminal", {"command": "echo x > $NO_SUCH_VAR_HERMES/out.txt"}).status
        == "denied"
    )
    outcome = builtin_system.call_outcome(
        "terminal", {"command": "mkdir -p sub && cd sub && echo ok > out.txt"}
    )
    assert outcome.status == "ok"
    assert (workspace / "sub" / "out.txt").read_text() == "ok\n"


def test_background_process_lifecycle(builtin_system: ToolSystem, workspace: Path) -> None:
    out = builtin_system.call(
        "terminal", {"command": "echo start; sleep 0.3; echo done; exit 4", "background": True}
    )
    assert out.startswith("started in the background: process_id=")
    pid_key = out.split("process_id=")[1].split(" ")[0]
    waited = builtin_system.call("process", {"action": "wait", "process_id": pid_key, "timeout": 10})
    status = json.loads(waited.splitlines()[0])
    assert status["status"] == "exited" and status["exit_code"] == 4
    assert waited.splitlines()[-2:] == ["start", "done"]
    listing = json.loads(builtin_system.call("process", {"action": "list"}))
    assert [p["id"] for p in listing] == [pid_key]
    log = builtin_system.call("process", {"action": "log", "process_id": pid_key, "offset": 2, "limit": 1})
    assert log.splitlines() == [f"[{pid_key} exited; output lines 2-2 of 2]", "done"]
    assert (
        builtin_system.call_outcome("process", {"action": "poll", "process_id": "proc_nope"}).status
        == "error"
    )
    assert "process_id is required" in builtin_system.call("process", {"action": "log"})


def test_background_kill_ends_children_too(builtin_system: ToolSystem) -> None:
    child = sleep_marker()
    out = builtin_system.call(
        "terminal", {"command": f"setsid sleep {child} & echo up; sleep 60", "background": True}
    )
    pid_key = out.split("process_id=")[1].split(" ")[0]
    deadline = time.monotonic() + 5
    while not processes_with_arg(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert processes_with_arg(child)
    polled = json.loads(
        builtin_system.call("process", {"action": "poll", "process_id": pid_key}).splitlines()[0]
    )
    assert polled["status"] == "running"
    killed = json.loads(builtin_system.call("process", {"action": "kill", "process_id": pid_key}))
    assert killed["status"] == "killed" and killed["kill"].startswith("terminated")
    assert processes_gone(child)


def test_background_processes_outlive_the_thread_that_started_them(builtin_system: ToolSystem) -> None:
    import threading

    box: dict[str, str] = {}
    starter = threading.Thread(
        target=lambda: box.setdefault(
            "out", builtin_system.call("terminal", {"command": "sleep 5", "background": True})
        )
    )
    starter.start()
    starter.join()
    pid_key = box["out"].split("process_id=")[1].split(" ")[0]
    time.sleep(0.3)
    status = json.loads(
        builtin_system.call("process", {"action": "poll", "process_id": pid_key}).splitlines()[0]
    )
    assert status["status"] == "running"
    builtin_system.call("process", {"action": "kill", "process_id": pid_key})


def test_closing_the_system_kills_background_processes(make_builtin_system: MakeSystem) -> None:
    s = make_builtin_system()
    child = sleep_marker()
    s.call("terminal", {"command": f"setsid sleep {child} & wait", "background": True})
    deadline = time.monotonic() + 15  # waits until true: generous for a loaded machine, quick otherwise
    while not processes_with_arg(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert processes_with_arg(child)
    s.close()
    assert processes_gone(child, 15)


def test_background_output_is_capped_on_disk(make_builtin_system: MakeSystem) -> None:
    s = make_builtin_system(config=_settings(max_log_bytes=200_000))
    out = s.call("terminal", {"command": "yes flood | head -c 5000000; echo; echo END", "background": True})
    pid_key = out.split("process_id=")[1].split(" ")[0]
    waited = s.call("process", {"action": "wait", "process_id": pid_key, "timeout": 20})
    assert waited.splitlines()[-1] == "END"
    assert (
        "were discarded (log cap)" in waited
    )  # what was printed since the last read, minus the rotated part
    spool = Path(os.environ["HERMES_HOME"]) / "data" / "processes"
    assert sum(p.stat().st_size for p in spool.iterdir()) < 400_000


def test_terminal_is_hidden_without_bash(
    builtin_system: ToolSystem, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    names = {d["function"]["name"] for d in builtin_system.definitions()}
    assert {"terminal", "process"} <= names
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    builtin_system.invalidate_checks()
    names = {d["function"]["name"] for d in builtin_system.definitions()}
    assert "terminal" not in names and "process" not in names


@pytest.mark.parametrize("tool", ["terminal", "process", "execute_code"])
def test_the_pipeline_never_cuts_a_timeout_the_schema_allows(builtin_system: ToolSystem, tool: str) -> None:
    entry = builtin_system.registry.get(tool)
    assert entry is not None
    allowed = entry.schema["parameters"]["properties"]["timeout"]["maximum"]
    assert builtin_system.config.timeout < allowed  # the default pipeline timeout alone would cut it...
    assert entry.timeout is not None and entry.timeout > allowed  # ...so the tool declares its own


def test_a_configured_pipeline_timeout_ends_the_command_cleanly_first(
    make_builtin_system: MakeSystem,
) -> None:
    s = make_builtin_system(config={"limits": {"tools": {"terminal": {"timeout": 3}}}})
    start = time.monotonic()
    outcome = s.call_outcome("terminal", {"command": "echo started; sleep 30", "timeout": 600})
    assert time.monotonic() - start < 6
    assert outcome.status == "ok", outcome.result
    assert outcome.result.startswith("started\n") and "timed out after 2s" in outcome.result
