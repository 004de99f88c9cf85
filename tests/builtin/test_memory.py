"""``memory`` through ``ToolSystem.call``: entries with ids, the size cap, persistence, concurrent writers."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ToolSystem


def test_add_read_replace_remove(builtin_system: ToolSystem) -> None:
    assert (
        builtin_system.call("memory", {"action": "read"})
        == "Memory 'notes' (0 entries, 0/20000 chars): empty."
    )
    assert builtin_system.call("memory", {"action": "add", "content": "Project uses tabs"}).startswith(
        "Added entry 1."
    )
    builtin_system.call("memory", {"action": "add", "content": "Deploys go through CI only"})
    out = builtin_system.call("memory", {"action": "replace", "id": 1, "content": "Project uses 4 spaces"})
    assert out.startswith("Replaced entry 1.")
    assert builtin_system.call("memory", {"action": "remove", "id": 2}).startswith("Removed entry 2.")
    assert builtin_system.call("memory", {"action": "read"}) == (
        "Memory 'notes' (1 entries, 21/20000 chars):\n[1] Project uses 4 spaces"
    )


def test_targets_are_separate_and_survive_a_new_system(
    builtin_system: ToolSystem, make_builtin_system: Callable[..., ToolSystem]
) -> None:
    builtin_system.call("memory", {"action": "add", "target": "user", "content": "Prefers short answers"})
    assert "empty" in builtin_system.call("memory", {"action": "read"})
    again = make_builtin_system()
    assert "[1] Prefers short answers" in again.call("memory", {"action": "read", "target": "user"})
    assert (builtin_system.data_dir / "memory" / "user.json").is_file()


def test_duplicates_are_not_stored_twice(builtin_system: ToolSystem) -> None:
    builtin_system.call("memory", {"action": "add", "content": "same fact"})
    assert "nothing added" in builtin_system.call("memory", {"action": "add", "content": "  same fact  "})
    assert "(1 entries" in builtin_system.call("memory", {"action": "read"})


def test_size_cap_gives_a_clear_error_and_keeps_old_entries(builtin_system: ToolSystem) -> None:
    for i in range(5):
        assert builtin_system.call_outcome("memory", {"action": "add", "content": f"{i}" + "x" * 3999}).ok
    outcome = builtin_system.call_outcome("memory", {"action": "add", "content": "one more"})
    assert outcome.status == "error"
    assert "memory is full: 20000/20000 chars used" in outcome.result
    # growing an entry past the cap fails too; shrinking works
    grown = builtin_system.call_outcome("memory", {"action": "replace", "id": 1, "content": "y" * 4000 + "z"})
    assert grown.status == "error"
    assert builtin_system.call_outcome("memory", {"action": "replace", "id": 1, "content": "short"}).ok
    assert builtin_system.call_outcome("memory", {"action": "add", "content": "fits now"}).ok


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"action": "remove", "id": 7}, "no entry 7"),
        ({"action": "replace", "content": "x"}, "needs 'old_text'"),
        ({"action": "remove", "old_text": "nothing like it"}, "no entry of memory 'notes' contains"),
        ({"action": "add", "content": "   "}, "non-empty 'content'"),
    ],
)
def test_bad_requests(builtin_system: ToolSystem, args: dict[str, Any], needle: str) -> None:
    outcome = builtin_system.call_outcome("memory", args)
    assert outcome.status == "error" and needle in outcome.result


def test_replace_and_remove_by_matching_text(builtin_system: ToolSystem) -> None:
    for text in ("Tests run with pytest -x", "Deploys go through staging first", "The user prefers tabs"):
        assert builtin_system.call_outcome("memory", {"action": "add", "content": text}).ok
    out = builtin_system.call(
        "memory", {"action": "replace", "old_text": "staging", "content": "Deploys go through canary first"}
    )
    assert out.startswith("Replaced entry 2.")
    assert builtin_system.call("memory", {"action": "remove", "old_text": "prefers  tabs"}).startswith(
        "Removed entry 3."  # spaces are normalised, as the model may copy them loosely
    )
    listing = builtin_system.call("memory", {"action": "read"})
    assert "[2] Deploys go through canary first" in listing and "tabs" not in listing


def test_an_ambiguous_match_is_refused_with_the_candidates(builtin_system: ToolSystem) -> None:
    for text in ("Run tests with pytest", "Run linters with ruff", "Run"):
        builtin_system.call("memory", {"action": "add", "content": text})
    before = builtin_system.call("memory", {"action": "read"})
    outcome = builtin_system.call_outcome("memory", {"action": "remove", "old_text": "with"})
    assert (
        outcome.status == "error"
        and "matches 2 entries" in outcome.result
        and "nothing was changed" in outcome.result
    )
    assert "[1] Run tests with pytest" in outcome.result and "[2] Run linters with ruff" in outcome.result
    assert builtin_system.call("memory", {"action": "read"}) == before
    # an entry that equals the text exactly is the one meant, even when others contain it
    assert builtin_system.call("memory", {"action": "remove", "old_text": "Run"}).startswith(
        "Removed entry 3."
    )


@pytest.mark.parametrize(
    "args",
    [
        {"action": "add", "target": "../../etc", "content": "x"},
        {"action": "add", "content": "x" * 4001},
        {"action": "forget"},
        {"action": "remove", "id": "one"},
    ],
)
def test_schema_rejects_hostile_arguments(builtin_system: ToolSystem, args: dict[str, Any]) -> None:
    outcome = builtin_system.call_outcome("memory", args)
    assert outcome.error_kind == "invalid_arguments"
    assert not (builtin_system.data_dir / "memory").exists()


def test_concurrent_processes_lose_no_entries(builtin_system: ToolSystem, workspace: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        import hermes_builtin.plugin
        from hermes_core import ToolSystem

        s = ToolSystem.load(
            plugins_dir=False,
            load_entry_points=False,
            plugins=[hermes_builtin.plugin],
            workspace={str(workspace)!r},
        )
        for i in range(15):
            out = s.call_outcome("memory", {{"action": "add", "content": f"proc {{sys.argv[1]}} fact {{i}}"}})
            assert out.ok, out.result
        s.close()
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(n)]) for n in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    stored = json.loads((builtin_system.data_dir / "memory" / "notes.json").read_text(encoding="utf-8"))
    contents = {e["content"] for e in stored["entries"]}
    assert contents == {f"proc {n} fact {i}" for n in range(4) for i in range(15)}
    assert sorted(e["id"] for e in stored["entries"]) == list(range(1, 61))
