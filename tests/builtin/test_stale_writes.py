"""The stale-write guard: a file changed on disk since this session last read or wrote it is not overwritten
or patched without ``force``; two agents (sessions) editing one file no longer undo each other silently."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from hermes_core import ToolSystem

MakeSystem = Callable[..., ToolSystem]


def _error(outcome: object) -> str:
    assert getattr(outcome, "status", None) == "error", outcome
    return str(json.loads(outcome.result)["error"])  # type: ignore[attr-defined]


def test_a_file_changed_behind_the_agents_back_is_not_overwritten(
    make_builtin_system: MakeSystem, workspace: Path
) -> None:
    system = make_builtin_system()
    target = workspace / "notes.md"
    target.write_text("first\n")
    assert "first" in system.call("read_file", {"path": "notes.md"})
    target.write_text("someone else's edit\n")  # an editor, a formatter, another agent
    message = _error(system.call_outcome("write_file", {"path": "notes.md", "content": "mine\n"}))
    assert "notes.md changed on disk since this session last read it" in message
    assert "nothing was written" in message and "force=true" in message
    assert target.read_text() == "someone else's edit\n"
    patched = system.call_outcome("patch", {"path": "notes.md", "old_string": "edit", "new_string": "EDIT"})
    assert "changed on disk" in _error(patched) and target.read_text() == "someone else's edit\n"
    forced = system.call_outcome("write_file", {"path": "notes.md", "content": "mine\n", "force": True})
    assert forced.ok and target.read_text() == "mine\n"


def test_two_sessions_editing_one_file(make_builtin_system: MakeSystem, workspace: Path) -> None:
    system = make_builtin_system()
    (workspace / "plan.txt").write_text("step 1\n")
    for session in ("agent-a", "agent-b"):
        system.call("read_file", {"path": "plan.txt"}, session_id=session)
    first = system.call_outcome(
        "patch",
        {"path": "plan.txt", "old_string": "step 1", "new_string": "step 1 (b)"},
        session_id="agent-b",
    )
    assert first.ok
    late = system.call_outcome(
        "write_file", {"path": "plan.txt", "content": "step 1 (a)\n"}, session_id="agent-a"
    )
    assert "changed on disk" in _error(late)
    assert (workspace / "plan.txt").read_text() == "step 1 (b)\n"  # b's change survives
    system.call("read_file", {"path": "plan.txt"}, session_id="agent-a")  # a looks again, then writes
    assert system.call_outcome(
        "write_file", {"path": "plan.txt", "content": "step 1 (a, b)\n"}, session_id="agent-a"
    ).ok


def test_own_writes_and_unread_files_are_not_stale(make_builtin_system: MakeSystem, workspace: Path) -> None:
    system = make_builtin_system()
    (workspace / "never_read.txt").write_text("x\n")
    assert system.call_outcome("write_file", {"path": "never_read.txt", "content": "y\n"}).ok  # not guarded
    for text in ("one\n", "two\n", "three\n"):  # its own writes are what the session saw last
        assert system.call_outcome("write_file", {"path": "own.txt", "content": text}).ok
    assert system.call_outcome("patch", {"path": "own.txt", "old_string": "three", "new_string": "3"}).ok
    patch = "*** Begin Patch\n*** Update File: own.txt\n-3\n+4\n*** End Patch"
    assert system.call_outcome("patch", {"mode": "patch", "patch": patch}).ok
    assert (workspace / "own.txt").read_text() == "4\n"


def test_a_touch_or_identical_rewrite_is_not_a_change(
    make_builtin_system: MakeSystem, workspace: Path
) -> None:
    system = make_builtin_system()
    target = workspace / "same.txt"
    target.write_text("content\n")
    system.call("read_file", {"path": "same.txt"})
    target.write_text("content\n")
    os.utime(target, ns=(1, 1))
    assert system.call_outcome("write_file", {"path": "same.txt", "content": "new\n"}).ok


def test_a_same_size_change_with_the_old_timestamp_is_caught(
    make_builtin_system: MakeSystem, workspace: Path
) -> None:
    system = make_builtin_system()
    target = workspace / "tick.txt"
    target.write_text("aaaa\n")
    system.call("read_file", {"path": "tick.txt"})
    st = target.stat()
    with target.open("r+") as fh:  # in place, same size, timestamps put back: only the content tells
        fh.write("bbbb")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert "changed on disk" in _error(
        system.call_outcome("write_file", {"path": "tick.txt", "content": "c\n"})
    )


def test_a_file_deleted_since_it_was_read(make_builtin_system: MakeSystem, workspace: Path) -> None:
    system = make_builtin_system()
    (workspace / "gone.txt").write_text("x\n")
    system.call("read_file", {"path": "gone.txt"})
    (workspace / "gone.txt").unlink()
    message = _error(system.call_outcome("write_file", {"path": "gone.txt", "content": "back\n"}))
    assert "was deleted since this session last read it" in message
    assert not (workspace / "gone.txt").exists()
    assert system.call_outcome("write_file", {"path": "gone.txt", "content": "back\n", "force": True}).ok


def test_a_multi_file_patch_checks_every_file_first(make_builtin_system: MakeSystem, workspace: Path) -> None:
    system = make_builtin_system()
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    system.call("read_file", {"path": "b.txt"})
    (workspace / "b.txt").write_text("b changed\n")
    patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Update File: b.txt\n-b changed\n+B\n*** End Patch"
    assert "b.txt changed on disk" in _error(system.call_outcome("patch", {"mode": "patch", "patch": patch}))
    assert (workspace / "a.txt").read_text() == "a\n"  # all or nothing
    assert system.call_outcome("patch", {"mode": "patch", "patch": patch, "force": True}).ok
    assert (workspace / "b.txt").read_text() == "B\n"
