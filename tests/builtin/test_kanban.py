"""The kanban tools through ``ToolSystem.call``, including several real processes on one board."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from hermes_core import ToolSystem


def _ok(system: ToolSystem, name: str, args: dict[str, Any], session_id: str | None = None) -> str:
    outcome = system.call_outcome(name, args, session_id=session_id)
    assert outcome.ok, outcome.result
    return outcome.result


def _err(system: ToolSystem, name: str, args: dict[str, Any], session_id: str | None = None) -> str:
    outcome = system.call_outcome(name, args, session_id=session_id)
    assert outcome.status == "error", outcome.result
    return outcome.result


def test_create_list_claim_comment_and_finish(builtin_system: ToolSystem) -> None:
    assert (
        _ok(builtin_system, "kanban_create", {"title": "Write  docs", "priority": 2})
        == "Created task #1: Write docs"
    )
    _ok(builtin_system, "kanban_create", {"title": "Release", "depends_on": [1], "assignee": "bob"})
    assert _ok(builtin_system, "kanban_list", {}).splitlines() == [
        "#1 [todo] p2 Write docs v1",
        "#2 [todo] @bob Release v1",
    ]
    out = _ok(
        builtin_system,
        "kanban_update",
        {"task_id": 1, "claim": True, "comment": "starting"},
        session_id="alice",
    )
    assert out == "Updated: #1 [in_progress] p2 @alice Write docs v2 (todo -> in_progress; comment added)"
    assert "already claimed by alice" in _err(
        builtin_system, "kanban_update", {"task_id": 1, "claim": True}, session_id="eve"
    )
    assert (
        _ok(builtin_system, "kanban_list", {"assignee": "me"}, session_id="alice")
        == "#1 [in_progress] p2 @alice Write docs v2"
    )
    _ok(builtin_system, "kanban_update", {"task_id": 1, "status": "done"}, session_id="alice")
    assert _ok(builtin_system, "kanban_list", {}) == "#2 [todo] @bob Release v1"
    assert "#1 [done]" in _ok(builtin_system, "kanban_list", {"status": "all"})
    detail = _ok(builtin_system, "kanban_list", {"task_id": 1})
    assert "created by default" in detail and "needed by: #2" in detail
    assert re.search(r"- alice at \d{4}-\d\d-\d\d \d\d:\d\d UTC: starting", detail)


def test_dependencies_block_progress_and_cycles_are_refused(builtin_system: ToolSystem) -> None:
    for title in ("a", "b", "c"):
        _ok(builtin_system, "kanban_create", {"title": title})
    _ok(builtin_system, "kanban_update", {"task_id": 2, "add_dependencies": [1]})
    _ok(builtin_system, "kanban_update", {"task_id": 3, "add_dependencies": [2]})
    assert "waits on unfinished dependencies: #2 (todo)" in _err(
        builtin_system, "kanban_update", {"task_id": 3, "status": "in_progress"}
    )
    assert "cannot depend on itself" in _err(
        builtin_system, "kanban_update", {"task_id": 1, "add_dependencies": [1]}
    )
    assert "#3 already depends on #1" in _err(
        builtin_system, "kanban_update", {"task_id": 1, "add_dependencies": [3]}
    )
    assert "no task #99" in _err(builtin_system, "kanban_create", {"title": "d", "depends_on": [99]})
    # the refused create left nothing behind
    assert "#4" not in _ok(builtin_system, "kanban_list", {"status": "all"})
    _ok(builtin_system, "kanban_update", {"task_id": 2, "status": "cancelled"})
    _ok(builtin_system, "kanban_update", {"task_id": 3, "remove_dependencies": [2], "status": "in_progress"})


def test_blocked_needs_a_reason_and_versions_detect_races(builtin_system: ToolSystem) -> None:
    _ok(builtin_system, "kanban_create", {"title": "t"})
    assert "needs a 'blocker'" in _err(builtin_system, "kanban_update", {"task_id": 1, "status": "blocked"})
    out = _ok(
        builtin_system, "kanban_update", {"task_id": 1, "status": "blocked", "blocker": "waiting for creds"}
    )
    assert "(blocked: waiting for creds) v2" in out
    assert "changed meanwhile (version 2, you expected 1)" in _err(
        builtin_system, "kanban_update", {"task_id": 1, "title": "x", "expected_version": 1}
    )
    out = _ok(builtin_system, "kanban_update", {"task_id": 1, "status": "todo", "expected_version": 2})
    assert out.startswith("Updated: #1 [todo] t v3")  # the blocker is cleared when unblocked


@pytest.mark.parametrize(
    ("tool", "args", "needle"),
    [
        ("kanban_update", {"task_id": 5, "comment": "x"}, "no task #5"),
        ("kanban_update", {"task_id": 1}, "nothing to change"),
        ("kanban_update", {"task_id": 1, "comment": "   "}, "the comment is empty"),
        ("kanban_update", {"task_id": 1, "title": "   "}, "the title cannot be empty"),
        ("kanban_create", {"title": "   "}, "a task needs a title"),
        ("kanban_list", {"task_id": 42}, "no task #42"),
    ],
)
def test_bad_requests(builtin_system: ToolSystem, tool: str, args: dict[str, Any], needle: str) -> None:
    _ok(builtin_system, "kanban_create", {"title": "one"})
    assert needle in _err(builtin_system, tool, args)


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("kanban_update", {"task_id": "1; DROP TABLE tasks"}),
        ("kanban_update", {"task_id": 1, "status": "finished"}),
        ("kanban_create", {"title": "x" * 300}),
        ("kanban_create", {"title": "x", "depends_on": [0]}),
        ("kanban_list", {"status": "open' OR 1=1 --"}),
    ],
)
def test_hostile_arguments_are_rejected_by_the_schema(
    builtin_system: ToolSystem, tool: str, args: dict[str, Any]
) -> None:
    _ok(builtin_system, "kanban_create", {"title": "one"})
    assert builtin_system.call_outcome(tool, args).error_kind == "invalid_arguments"
    assert _ok(builtin_system, "kanban_list", {}) == "#1 [todo] one v1"


def test_text_is_stored_verbatim_not_interpreted(builtin_system: ToolSystem) -> None:
    title = "Robert'); DROP TABLE tasks;-- ü 🚀"
    _ok(builtin_system, "kanban_create", {"title": title, "assignee": "x' OR '1'='1"})
    assert title in _ok(builtin_system, "kanban_list", {"assignee": "x' OR '1'='1"})
    assert _ok(builtin_system, "kanban_list", {"assignee": "x"}) == "No matching tasks on the board."


_WORKER = textwrap.dedent(
    """
    import sys
    import hermes_builtin.plugin
    from hermes_core import ToolSystem

    me = sys.argv[1]
    s = ToolSystem.load(
        plugins_dir=False, load_entry_points=False, plugins=[hermes_builtin.plugin], session_id=me
    )
    claim = s.call_outcome("kanban_update", {"task_id": 1, "claim": True})
    print("CLAIM", "won" if claim.ok else "lost", flush=True)
    for i in range(25):
        out = s.call_outcome("kanban_update", {"task_id": 2, "comment": f"{me} note {i}"})
        assert out.ok, out.result
        made = s.call_outcome("kanban_create", {"title": f"{me} task {i}"})
        assert made.ok, made.result
    s.close()
    """
)


def test_several_processes_share_one_board_without_lost_updates(builtin_system: ToolSystem) -> None:
    _ok(builtin_system, "kanban_create", {"title": "the prize"})
    _ok(builtin_system, "kanban_create", {"title": "the log"})
    workers = [f"agent{n}" for n in range(4)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, w], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for w in workers
    ]
    outputs = [p.communicate(timeout=90) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [err for _, err in outputs]
    claims = [line for out, _ in outputs for line in out.splitlines() if line.startswith("CLAIM")]
    assert sorted(claims) == ["CLAIM lost"] * 3 + ["CLAIM won"]
    db = sqlite3.connect(builtin_system.data_dir / "kanban" / "board.db")
    try:
        assert db.execute("SELECT count(*) FROM comments WHERE task_id = 2").fetchone()[0] == 100
        assert db.execute("SELECT version FROM tasks WHERE id = 2").fetchone()[0] == 101
        titles = {r[0] for r in db.execute("SELECT title FROM tasks WHERE id > 2")}
        assert titles == {f"{w} task {i}" for w in workers for i in range(25)}
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()
    winner = _ok(builtin_system, "kanban_list", {"task_id": 1}).splitlines()[0]
    assert re.fullmatch(r"#1 \[in_progress\] @agent\d the prize v2", winner)
