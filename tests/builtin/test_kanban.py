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
    out = _ok(builtin_system, "kanban_claim", {"task_id": 1}, session_id="alice")
    assert out.startswith("Claimed: #1 [in_progress] p2 Write docs (held by alice, lease")
    _ok(builtin_system, "kanban_comment", {"task_id": 1, "body": "starting"}, session_id="alice")
    assert "claimed by alice" in _err(builtin_system, "kanban_claim", {"task_id": 1}, session_id="eve")
    assert "assigned to bob" in _err(builtin_system, "kanban_claim", {"task_id": 2}, session_id="eve")
    assert _ok(builtin_system, "kanban_list", {"mine": True}, session_id="alice").startswith(
        "#1 [in_progress]"
    )
    assert "no claim" in _err(builtin_system, "kanban_complete", {"task_id": 1}, session_id="eve")
    _ok(builtin_system, "kanban_complete", {"task_id": 1, "result": "written"}, session_id="alice")
    assert _ok(builtin_system, "kanban_list", {}) == "#2 [todo] @bob Release v1"
    assert "#1 [done]" in _ok(builtin_system, "kanban_list", {"status": "all"})
    detail = _ok(builtin_system, "kanban_show", {"task_id": 1})
    assert "created by default" in detail and "needed by: #2" in detail and "result: written" in detail
    assert re.search(r"- alice at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: starting", detail)
    assert _ok(builtin_system, "kanban_claim", {"task_id": 2}, session_id="bob").startswith("Claimed: #2")


def test_dependencies_hold_claims_back_and_cycles_are_refused(builtin_system: ToolSystem) -> None:
    _ok(builtin_system, "kanban_create", {"title": "a"})
    _ok(builtin_system, "kanban_create", {"title": "b", "depends_on": [1]})
    assert "waits on unfinished dependencies: #1 (todo)" in _err(
        builtin_system, "kanban_claim", {"task_id": 2}
    )
    assert _ok(builtin_system, "kanban_list", {"ready": True}) == "#1 [todo] a v1"
    assert "#2 already depends on #1" in _err(
        builtin_system, "kanban_link", {"task_id": 1, "other_id": 2, "kind": "depends_on"}
    )
    _ok(builtin_system, "kanban_update", {"task_id": 1, "status": "cancelled"})
    assert _ok(builtin_system, "kanban_claim", {}).startswith("Claimed: #2")


def test_versions_detect_races(builtin_system: ToolSystem) -> None:
    _ok(builtin_system, "kanban_create", {"title": "a"})
    _ok(builtin_system, "kanban_update", {"task_id": 1, "priority": 3, "expected_version": 1})
    assert "changed meanwhile" in _err(
        builtin_system, "kanban_update", {"task_id": 1, "title": "b", "expected_version": 1}
    )


@pytest.mark.parametrize(
    ("tool", "args", "needle"),
    [
        ("kanban_create", {"title": "x", "depends_on": [1, 99]}, "no task #99"),
        ("kanban_update", {"task_id": 99, "title": "x"}, "no task #99"),
        ("kanban_update", {"task_id": 1}, "nothing to change"),
        ("kanban_comment", {"task_id": 1, "body": "   "}, "the comment is empty"),
        ("kanban_update", {"task_id": 1, "title": "   "}, "the title cannot be empty"),
        ("kanban_create", {"title": "   "}, "a task needs a title"),
        ("kanban_show", {"task_id": 42}, "no task #42"),
        ("kanban_unblock", {"task_id": 1}, "not blocked"),
        ("kanban_link", {"task_id": 1, "other_id": 1, "kind": "relates_to"}, "cannot link to itself"),
        ("kanban_heartbeat", {"task_id": 1}, "no claim"),
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
        ("kanban_update", {"task_id": 1, "status": "done"}),  # done only through kanban_complete
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
    assert title in _ok(builtin_system, "kanban_list", {"mine": True}, session_id="x' OR '1'='1")
    assert (
        _ok(builtin_system, "kanban_list", {"mine": True}, session_id="x")
        == "No matching tasks on the board."
    )


def test_a_board_of_the_previous_version_is_read_and_upgraded(builtin_system: ToolSystem) -> None:
    path = builtin_system.data_dir / "kanban" / "board.db"
    path.parent.mkdir(parents=True)
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE tasks (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, description TEXT NOT NULL "
        "DEFAULT '', status TEXT NOT NULL DEFAULT 'todo', assignee TEXT, blocker TEXT, priority INTEGER NOT NULL "
        "DEFAULT 0, created_by TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, version INTEGER "
        "NOT NULL DEFAULT 1);"
        "CREATE TABLE deps (task_id INTEGER NOT NULL, depends_on INTEGER NOT NULL, PRIMARY KEY (task_id, depends_on));"
        "INSERT INTO tasks (title, created_by, created_at, updated_at) VALUES ('kept from before', 'x', 1, 1);"
    )
    db.close()
    assert _ok(builtin_system, "kanban_list", {}) == "#1 [todo] kept from before v1"
    assert _ok(builtin_system, "kanban_claim", {}).startswith("Claimed: #1")


_WORKER = textwrap.dedent(
    """
    import sys
    import hermes_builtin.plugin
    from hermes_core import ToolSystem

    me = sys.argv[1]
    s = ToolSystem.load(
        plugins_dir=False, load_entry_points=False, plugins=[hermes_builtin.plugin], session_id=me
    )
    claim = s.call_outcome("kanban_claim", {"task_id": 1})
    print("CLAIM", "won" if claim.ok else "lost", flush=True)
    for i in range(25):
        out = s.call_outcome("kanban_comment", {"task_id": 2, "body": f"{me} note {i}"})
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
    winner = _ok(builtin_system, "kanban_show", {"task_id": 1}).splitlines()[0]
    assert re.fullmatch(r"#1 \[in_progress\] the prize \(held by agent\d, lease \d+ s left\) v2", winner)
