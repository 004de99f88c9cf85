"""``skills_list``, ``skill_view``, ``skill_manage`` through ``ToolSystem.call`` on real skill folders."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from hermes_builtin.tools.work import skills
from hermes_builtin.tools.work._frontmatter import FrontMatterError, parse_front_matter
from hermes_core import ToolSystem


def _md(
    name: str, description: str = "Use it for testing things.", body: str = "Step one.\nStep two.\n"
) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


def _ok(system: ToolSystem, name: str, args: dict[str, Any]) -> str:
    outcome = system.call_outcome(name, args)
    assert outcome.ok, outcome.result
    return outcome.result


def _err(system: ToolSystem, name: str, args: dict[str, Any]) -> str:
    outcome = system.call_outcome(name, args)
    assert outcome.status == "error", outcome.result
    return outcome.result


def test_bundled_skills_are_listed_with_names_and_descriptions_only(builtin_system: ToolSystem) -> None:
    out = _ok(builtin_system, "skills_list", {})
    assert "- git-workflow [bundled]: Make clean, reviewable git commits" in out
    assert "- systematic-debugging [bundled]:" in out
    assert "git rebase" not in out  # bodies are not loaded by the listing


def test_view_loads_the_whole_skill_and_its_linked_files(builtin_system: ToolSystem) -> None:
    out = _ok(builtin_system, "skill_view", {"name": "git-workflow"})
    assert out.startswith("---\nname: git-workflow\n")
    assert "git rebase --abort" in out
    assert out.endswith("Linked files (read with skill_view file_path=...):\n- references/commit-messages.md")
    ref = _ok(
        builtin_system, "skill_view", {"name": "git-workflow", "file_path": "references/commit-messages.md"}
    )
    assert ref.startswith("# Commit messages")


def test_create_edit_write_file_delete(builtin_system: ToolSystem) -> None:
    assert _ok(
        builtin_system, "skill_manage", {"action": "create", "name": "deploy", "content": _md("deploy")}
    ) == ("Created skill 'deploy'.")
    assert "- deploy: Use it for testing things." in _ok(builtin_system, "skills_list", {})
    _ok(
        builtin_system,
        "skill_manage",
        {"action": "edit", "name": "deploy", "old_string": "Step two.", "new_string": "Step 2."},
    )
    assert "Step 2." in _ok(builtin_system, "skill_view", {"name": "deploy"})
    _ok(
        builtin_system,
        "skill_manage",
        {"action": "edit", "name": "deploy", "content": _md("deploy", "New description.")},
    )
    assert "- deploy: New description." in _ok(builtin_system, "skills_list", {})
    _ok(
        builtin_system,
        "skill_manage",
        {"action": "write_file", "name": "deploy", "file_path": "scripts/run.sh", "content": "echo hi\n"},
    )
    assert _ok(builtin_system, "skill_view", {"name": "deploy", "file_path": "scripts/run.sh"}) == "echo hi\n"
    assert "- scripts/run.sh" in _ok(builtin_system, "skill_view", {"name": "deploy"})
    _ok(
        builtin_system,
        "skill_manage",
        {"action": "remove_file", "name": "deploy", "file_path": "scripts/run.sh"},
    )
    assert "no file" in _err(builtin_system, "skill_view", {"name": "deploy", "file_path": "scripts/run.sh"})
    _ok(builtin_system, "skill_manage", {"action": "delete", "name": "deploy"})
    assert "no skill named 'deploy'" in _err(builtin_system, "skill_view", {"name": "deploy"})
    assert sorted(p.name for p in (builtin_system.data_dir / "skills").iterdir()) == [".lock"]


def test_bundled_skills_are_read_only_but_can_be_overridden(builtin_system: ToolSystem) -> None:
    assert "read-only" in _err(
        builtin_system,
        "skill_manage",
        {"action": "edit", "name": "code-review", "content": _md("code-review")},
    )
    assert "read-only" in _err(builtin_system, "skill_manage", {"action": "delete", "name": "code-review"})
    out = _ok(
        builtin_system,
        "skill_manage",
        {"action": "create", "name": "code-review", "content": _md("code-review", "Mine.")},
    )
    assert "overrides the bundled skill" in out
    listing = _ok(builtin_system, "skills_list", {})
    assert "- code-review: Mine." in listing and "code-review [bundled]" not in listing
    assert "Step one." in _ok(builtin_system, "skill_view", {"name": "code-review"})
    _ok(builtin_system, "skill_manage", {"action": "delete", "name": "code-review"})
    assert "- code-review [bundled]:" in _ok(builtin_system, "skills_list", {})
    assert (skills.BUNDLED_DIR / "code-review" / "SKILL.md").is_file()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("no front matter here", "must start with a '---' line"),
        ("---\nname: good\ndescription: d\n", "not closed"),
        (_md("other"), "must say 'name: good'"),
        ("---\nname: good\n---\nbody", "needs a 'description'"),
        (_md("good", body=""), "needs instructions"),
        (_md("good", "d" * 1100), "keep it under 1024"),
        (_md("good", body="x" * 50_001), "the limit is 50000"),
        ("---\nname: good\nname: good\ndescription: d\n---\nbody", "duplicate key"),
        ("---\nname good\ndescription: d\n---\nbody", "expected 'key: value'"),
    ],
)
def test_create_validates_skill_md(builtin_system: ToolSystem, content: str, needle: str) -> None:
    assert needle in _err(
        builtin_system, "skill_manage", {"action": "create", "name": "good", "content": content}
    )
    assert not (builtin_system.data_dir / "skills" / "good").exists()


@pytest.mark.parametrize("name", ["Bad", "-x", "a/b", "..", "a" * 65, "x_y", ""])
def test_bad_names_are_refused(builtin_system: ToolSystem, name: str) -> None:
    outcome = builtin_system.call_outcome(
        "skill_manage", {"action": "create", "name": name, "content": _md(name)}
    )
    assert outcome.status == "error"
    assert "invalid skill name" in outcome.result or outcome.error_kind == "invalid_arguments"
    assert "invalid skill name" in _err(builtin_system, "skill_view", {"name": name}) or name == "a" * 65


@pytest.mark.parametrize("path", ["../escape.md", "/etc/passwd", "a/../../b", "./x", "a\\b", "a/b/c/d/e"])
def test_paths_must_stay_inside_the_skill(builtin_system: ToolSystem, path: str, tmp_path: Path) -> None:
    _ok(builtin_system, "skill_manage", {"action": "create", "name": "safe", "content": _md("safe")})
    _err(
        builtin_system,
        "skill_manage",
        {"action": "write_file", "name": "safe", "file_path": path, "content": "x"},
    )
    _err(builtin_system, "skill_view", {"name": "safe", "file_path": path})
    assert not (builtin_system.data_dir / "skills" / "escape.md").exists()


def test_symlinks_out_of_the_skill_are_not_followed(builtin_system: ToolSystem, tmp_path: Path) -> None:
    _ok(builtin_system, "skill_manage", {"action": "create", "name": "linky", "content": _md("linky")})
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret", encoding="utf-8")
    folder = builtin_system.data_dir / "skills" / "linky"
    os.symlink(secret, folder / "leak.md")
    os.symlink(tmp_path, folder / "outside")
    assert "outside the skill folder" in _err(
        builtin_system, "skill_view", {"name": "linky", "file_path": "leak.md"}
    )
    out = _err(
        builtin_system,
        "skill_manage",
        {"action": "write_file", "name": "linky", "file_path": "outside/new.md", "content": "x"},
    )
    assert "outside the skill folder" in out
    assert not (tmp_path / "new.md").exists()


def test_edit_needs_exactly_one_match_and_keeps_the_file_on_failure(builtin_system: ToolSystem) -> None:
    _ok(
        builtin_system,
        "skill_manage",
        {"action": "create", "name": "e", "content": _md("e", body="Step. Step.\n")},
    )
    before = (builtin_system.data_dir / "skills" / "e" / "SKILL.md").read_text(encoding="utf-8")
    assert "occurs 2 times" in _err(
        builtin_system,
        "skill_manage",
        {"action": "edit", "name": "e", "old_string": "Step.", "new_string": "S"},
    )
    assert "occurs 0 times" in _err(
        builtin_system,
        "skill_manage",
        {"action": "edit", "name": "e", "old_string": "nope", "new_string": "S"},
    )
    bad = {"action": "edit", "name": "e", "old_string": "name: e", "new_string": "name: f"}
    assert "must say 'name: e'" in _err(builtin_system, "skill_manage", bad)
    assert (builtin_system.data_dir / "skills" / "e" / "SKILL.md").read_text(encoding="utf-8") == before


def test_binary_and_missing_linked_files(builtin_system: ToolSystem) -> None:
    _ok(builtin_system, "skill_manage", {"action": "create", "name": "bin", "content": _md("bin")})
    (builtin_system.data_dir / "skills" / "bin" / "blob.dat").write_bytes(b"\xff\xfe\x00\x01")
    assert "not a text file" in _err(builtin_system, "skill_view", {"name": "bin", "file_path": "blob.dat"})
    assert "SKILL.md is changed with action patch or edit" in _err(
        builtin_system,
        "skill_manage",
        {"action": "write_file", "name": "bin", "file_path": "SKILL.md", "content": "x"},
    )


def test_concurrent_creators_of_one_name_make_exactly_one_skill(builtin_system: ToolSystem) -> None:
    results: list[str] = []

    def create() -> None:
        results.append(
            builtin_system.call("skill_manage", {"action": "create", "name": "race", "content": _md("race")})
        )

    threads = [threading.Thread(target=create) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("Created skill 'race'.") == 1
    assert sum("already exists" in r for r in results) == 5


def test_front_matter_parser_handles_quotes_blocks_and_comments() -> None:
    fields, body = parse_front_matter(
        '---\n# comment\nname: \'x\'\ndescription: >\n  folded\n  text\nnotes: |\n  a\n  b\ntitle: "q \\"t\\"" \n---\nBody'
    )
    assert fields == {"name": "x", "description": "folded text", "notes": "a\nb", "title": 'q "t"'}
    assert body == "Body"
    with pytest.raises(FrontMatterError):
        parse_front_matter("---\n  indented: first\n---\n")
