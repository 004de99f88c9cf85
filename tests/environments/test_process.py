"""Interactive background processes through ``terminal`` and ``process``, for real behind the sandbox: a REPL on a
pty, input on a pipe, what is new since the last read, watched lines that wake a wait and notify the session,
notifications on completion, and input that passes the command guard."""

from __future__ import annotations

import json
import re
import time

import pytest

from hermes_core import ToolSystem
from hermes_core.testing import processes_gone, sleep_marker


def _start(system: ToolSystem, command: str, session_id: str | None = None, **args: object) -> str:
    out = system.call("terminal", {"command": command, "background": True, **args}, session_id=session_id)
    assert "process_id=" in out, out
    return out.split("process_id=")[1].split(" ")[0]


def _process(system: ToolSystem, action: str, pid: str, **args: object) -> str:
    outcome = system.call_outcome("process", {"action": action, "process_id": pid, **args})
    assert outcome.status == "ok", outcome.result
    return outcome.result


def _status(result: str) -> dict[str, object]:
    for line in result.splitlines():
        if line.startswith("{"):
            found: dict[str, object] = json.loads(line)
            return found
    raise AssertionError(f"no status in {result!r}")


def _until(check: object, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_a_python_repl_on_a_pty(system: ToolSystem) -> None:
    pid = _start(system, "python3 -q", pty=True)
    _until(lambda: ">>>" in _process(system, "log", pid))
    answer = _process(system, "submit", pid, data="2+2")
    if "4" not in answer.splitlines():
        answer += _process(system, "wait", pid, timeout=2)
    assert "4" in [line.strip() for line in answer.splitlines()]
    assert "\x1b" not in answer and "\r" not in answer  # escape codes and carriage returns cleaned away
    again = _process(system, "submit", pid, data="import os; print(os.isatty(0), len('x' * 3))")
    _until(lambda: "True 3" in again or "True 3" in _process(system, "log", pid))
    closed = _process(system, "close", pid)  # Ctrl-D: the REPL exits
    if _status(closed)["status"] == "running":
        closed = _process(system, "wait", pid, timeout=10)
    assert _status(closed)["status"] == "exited" and _status(closed)["exit_code"] == 0
    assert _status(closed)["pty"] is True


def test_input_on_a_pipe_with_write_submit_and_close(system: ToolSystem) -> None:
    pid = _start(system, 'read first; read second; echo "got $first/$second"; cat; echo "cat saw the end"')
    _process(system, "submit", pid, data="one")
    _process(system, "write", pid, data="two\nfor cat\n")
    done = _process(system, "close", pid)
    if _status(done)["status"] == "running":
        done = _process(system, "wait", pid, timeout=10)
    log = _process(system, "log", pid)
    assert "got one/two" in log and "for cat" in log and "cat saw the end" in log
    assert _status(done)["exit_code"] == 0
    late = system.call_outcome("process", {"action": "submit", "process_id": pid, "data": "more"})
    assert late.status == "error" and "not running" in late.result


def test_poll_returns_only_what_is_new_without_escape_codes(system: ToolSystem) -> None:
    pid = _start(
        system,
        r"printf '\033[31mred\033[0m\n'; echo first; sleep 0.5; printf '10%%\r50%%\r100%%\n'; echo second; "
        "sleep 30",
    )
    _until(lambda: "first" in _process(system, "log", pid))
    first = _process(system, "poll", pid)
    assert "red" in first and "\x1b" not in first and "first" in first
    _until(lambda: "second" in _process(system, "log", pid))
    second = _process(system, "poll", pid)
    body = second.splitlines()[1:]
    assert body == ["100%", "second"]  # only the new lines; a progress line as it ended
    assert _process(system, "poll", pid).splitlines()[1:] == ["(no new output)"]
    assert "first" in _process(system, "log", pid, offset=1)  # the whole log is still there to page through
    killed = json.loads(_process(system, "kill", pid))
    assert killed["status"] == "killed"


def test_watch_patterns_wake_a_wait_and_notify_the_session(system: ToolSystem) -> None:
    pid = _start(
        system,
        "sleep 0.3; echo starting; echo 'server listening on port 8080'; sleep 60",
        watch_patterns=[r"listening on port \d+"],
    )
    started = time.monotonic()
    woke = _process(system, "wait", pid, timeout=30)
    assert time.monotonic() - started < 15  # woken by the line, long before the timeout
    assert woke.startswith("a watched line appeared")
    assert "server listening on port 8080" in woke
    notes = system.session().notifications()
    assert any("matched" in n and "listening on port 8080" in n and pid in n for n in notes), notes
    assert _status(woke)["watch_matches"] == 1
    _process(system, "kill", pid)


def test_notify_on_complete_tells_the_session_how_it_ended(system: ToolSystem) -> None:
    session = system.session()
    pid = _start(system, "echo the-last-words; exit 3", notify_on_complete=True)
    assert session.wait_notification(20)  # woken when it ends, without anyone asking
    text = "\n".join(session.notifications())
    assert f"process {pid} finished (exit code 3" in text and "the-last-words" in text
    assert session.notifications() == []  # each notification is taken once


def test_a_bad_watch_pattern_and_background_options_in_the_foreground_are_refused(system: ToolSystem) -> None:
    bad = system.call_outcome(
        "terminal", {"command": "true", "background": True, "watch_patterns": ["(unclosed"]}
    )
    assert bad.status == "error" and "watch_patterns" in bad.result
    foreground = system.call_outcome("terminal", {"command": "true", "pty": True})
    assert foreground.status == "error" and "background=true" in foreground.result


def test_input_to_a_process_passes_the_command_guard(system: ToolSystem) -> None:
    pid = _start(system, "bash --norc -i", pty=True)
    denied = system.call_outcome("process", {"action": "submit", "process_id": pid, "data": "rm -rf ~"})
    assert denied.status == "denied"
    fine = _process(system, "submit", pid, data="echo still here")
    _until(lambda: "still here" in fine or "still here" in _process(system, "log", pid))
    _process(system, "kill", pid)


def test_closing_the_session_ends_its_background_processes(system: ToolSystem) -> None:
    marker = sleep_marker()
    pid = _start(system, f"sleep {marker}", session_id="leaving")
    assert re.match(r"proc_[0-9a-f]+_\d+", pid)
    assert system.close_session("leaving")
    assert processes_gone(marker)
    listing = system.call("process", {"action": "list"}, session_id="leaving")
    assert listing == "no background processes"  # a new session with the same id starts empty


@pytest.mark.parametrize("action", ["poll", "write"])
def test_unknown_process_ids_say_which_exist(system: ToolSystem, action: str) -> None:
    outcome = system.call_outcome("process", {"action": action, "process_id": "proc_0_0", "data": "x"})
    assert outcome.status == "error" and "no background process" in outcome.result
