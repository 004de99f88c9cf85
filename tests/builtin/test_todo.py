"""``todo`` through ``ToolSystem.call``: per-session lists on disk, bad input, concurrent writers."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

import pytest

from hermes_core import ToolSystem


def test_add_update_list_clear_round_trip(builtin_system: ToolSystem) -> None:
    out = builtin_system.call("todo", {"action": "add", "items": ["write the parser", "test it", "ship"]})
    assert out.splitlines() == [
        "Todo (3 tasks, 0 completed):",
        "[ ] 1. write the parser",
        "[ ] 2. test it",
        "[ ] 3. ship",
    ]
    builtin_system.call("todo", {"action": "update", "id": 1, "status": "completed"})
    builtin_system.call(
        "todo", {"action": "update", "id": 2, "status": "in_progress", "content": "test   it well"}
    )
    out = builtin_system.call("todo", '{"action": "update", "id": 3, "status": "cancelled"}')
    assert "[x] 1. write the parser" in out
    assert "[>] 2. test it well" in out
    assert "[-] 3. ship" in out
    assert "1 completed" in out
    out = builtin_system.call("todo", {"action": "clear", "done_only": True})
    assert out.splitlines() == ["Todo (1 tasks, 0 completed):", "[>] 2. test it well"]
    assert builtin_system.call("todo", {"action": "clear"}) == "Todo list is empty."
    # ids keep growing after a clear, so an old id never names a new task
    assert "[ ] 4. again" in builtin_system.call("todo", {"action": "add", "items": ["again"]})


def test_write_replaces_the_whole_list(builtin_system: ToolSystem) -> None:
    builtin_system.call("todo", {"action": "add", "items": ["old one", "old two"]})
    todos = [
        {"content": "read the issue", "status": "completed"},
        {"content": "write the fix", "status": "in_progress"},
        {"content": "run the tests"},
    ]
    out = builtin_system.call("todo", {"action": "write", "todos": todos})
    assert out.splitlines() == [
        "Todo (3 tasks, 1 completed):",
        "[x] 3. read the issue",
        "[>] 4. write the fix",
        "[ ] 5. run the tests",
    ]
    kept = builtin_system.call(
        "todo", {"action": "write", "todos": [{"id": 4, "content": "write the fix", "status": "completed"}]}
    )
    assert kept.splitlines() == ["Todo (1 tasks, 1 completed):", "[x] 4. write the fix"]  # its id is kept


def test_write_with_merge_changes_by_id_and_adds_the_rest(builtin_system: ToolSystem) -> None:
    builtin_system.call("todo", {"action": "add", "items": ["parse", "test", "ship"]})
    merged = [
        {"id": 1, "status": "completed"},
        {"id": 2, "content": "test the parser", "status": "in_progress"},
        {"content": "write the changelog"},
        {"id": 99, "content": "tag the release"},  # an id nobody has: added, with that id
    ]
    out = builtin_system.call("todo", {"action": "write", "todos": merged, "merge": True})
    assert out.splitlines() == [
        "Todo (5 tasks, 1 completed):",
        "[x] 1. parse",
        "[>] 2. test the parser",
        "[ ] 3. ship",
        "[ ] 4. write the changelog",
        "[ ] 99. tag the release",
    ]
    before = builtin_system.call("todo", {"action": "list"})
    bad = builtin_system.call_outcome(
        "todo", {"action": "write", "todos": [{"status": "completed"}], "merge": True}
    )
    assert bad.status == "error" and "a new task needs 'content'" in bad.result
    assert builtin_system.call("todo", {"action": "list"}) == before  # nothing half-applied
    assert "needs 'todos'" in builtin_system.call("todo", {"action": "write"})


def test_lists_are_per_session_and_persist(
    builtin_system: ToolSystem, make_builtin_system: Callable[..., ToolSystem]
) -> None:
    builtin_system.call("todo", {"action": "add", "items": ["alpha"]}, session_id="one")
    builtin_system.call("todo", {"action": "add", "items": ["beta"]}, session_id="two")
    assert "alpha" in builtin_system.call("todo", {"action": "list"}, session_id="one")
    assert "alpha" not in builtin_system.call("todo", {"action": "list"}, session_id="two")
    fresh = make_builtin_system()
    assert "[ ] 1. beta" in fresh.call("todo", {"action": "list"}, session_id="two")


def test_hostile_session_id_stays_inside_the_data_dir(builtin_system: ToolSystem) -> None:
    builtin_system.call("todo", {"action": "add", "items": ["x"]}, session_id="../../etc/passwd")
    files = list((builtin_system.data_dir / "todo").iterdir())
    assert len([f for f in files if f.suffix == ".json"]) == 1
    assert all(f.parent == builtin_system.data_dir / "todo" for f in files)
    # a session id differing only in unsafe characters gets its own list
    assert "empty" in builtin_system.call("todo", {"action": "list"}, session_id="..__..__etc_passwd")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"action": "update", "id": 99, "status": "completed"}, "no task with id 99"),
        ({"action": "update", "id": 1}, "needs 'status' or 'content'"),
        ({"action": "update", "status": "completed"}, "needs 'id'"),
        ({"action": "add"}, "add needs 'items'"),
        ({"action": "add", "items": ["   "]}, "needs some text"),
    ],
)
def test_bad_requests_get_clear_errors(builtin_system: ToolSystem, args: dict[str, Any], needle: str) -> None:
    builtin_system.call("todo", {"action": "add", "items": ["one"]})
    outcome = builtin_system.call_outcome("todo", args)
    assert outcome.status == "error"
    assert needle in outcome.result


@pytest.mark.parametrize(
    "raw",
    [
        '{"action": "explode"}',
        '{"action": "add", "items": [""]}',
        '{"action": "update", "id": 1, "status": "done-ish"}',
        '{"action": "add", "items": ["' + "x" * 600 + '"]}',
        "not json at all",
        '{"action": ',
    ],
)
def test_schema_rejects_broken_arguments(builtin_system: ToolSystem, raw: str) -> None:
    outcome = builtin_system.call_outcome("todo", raw)
    assert outcome.status == "error"
    assert outcome.error_kind == "invalid_arguments"
    assert not (builtin_system.data_dir / "todo").exists() or not any(
        (builtin_system.data_dir / "todo").glob("*.json")
    )


def test_too_many_items_is_refused_and_nothing_is_added(builtin_system: ToolSystem) -> None:
    builtin_system.call("todo", {"action": "add", "items": [f"t{i}" for i in range(90)]})
    outcome = builtin_system.call_outcome("todo", {"action": "add", "items": [f"u{i}" for i in range(20)]})
    assert outcome.status == "error" and "more than 100 tasks" in outcome.result
    assert "(90 tasks" in builtin_system.call("todo", {"action": "list"})


def test_corrupt_file_is_reported_and_left_alone(builtin_system: ToolSystem) -> None:
    path = builtin_system.data_dir / "todo" / "default.json"
    path.parent.mkdir(parents=True)
    path.write_text("{broken", encoding="utf-8")
    outcome = builtin_system.call_outcome("todo", {"action": "add", "items": ["x"]})
    assert outcome.status == "error" and "corrupt" in outcome.result
    assert path.read_text(encoding="utf-8") == "{broken"


def test_failed_write_keeps_the_old_file(builtin_system: ToolSystem, monkeypatch: pytest.MonkeyPatch) -> None:
    builtin_system.call("todo", {"action": "add", "items": ["keep me"]})
    path = builtin_system.data_dir / "todo" / "default.json"
    before = path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", broken_replace)
    outcome = builtin_system.call_outcome("todo", {"action": "add", "items": ["lost"]})
    monkeypatch.undo()
    assert outcome.status == "error"
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []
    assert json.loads(before)["items"][0]["content"] == "keep me"


def test_concurrent_writers_lose_nothing(builtin_system: ToolSystem) -> None:
    def worker(n: int) -> None:
        for i in range(10):
            builtin_system.call("todo", {"action": "add", "items": [f"w{n}-{i}"]})

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = builtin_system.call("todo", {"action": "list"})
    assert out.startswith("Todo (50 tasks")
    ids = [int(re.search(r"\] (\d+)\. ", line).group(1)) for line in out.splitlines()[1:]]  # type: ignore[union-attr]
    assert sorted(ids) == list(range(1, 51))
