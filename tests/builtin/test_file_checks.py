"""``write_file`` and ``patch`` check Python, JSON, TOML and YAML they write and report the line and column of a
problem; the file is still written unless ``[plugins.file] format_check = "refuse"``; checking never runs what
is checked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hermes_core import ToolSystem

MakeSystem = Callable[..., ToolSystem]

BROKEN = {
    "bad.py": ("def f(:\n    return 1\n", "not valid Python", "line 1, column 7"),
    "bad.json": ('{"a": }\n', "not valid JSON: Expecting value", "line 1, column 7"),
    "bad.toml": ('[tool]\nname = "x"\nversion = \n', "not valid TOML: Invalid value", "line 3, column 11"),
    "bad.yaml": ("a: 1\nb: [1, 2\nc: 3\n", "not valid YAML", "line 3, column 2"),
    "bad.yml": ("a: b: c\n", "not valid YAML: mapping values are not allowed", "line 1, column 5"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_write_is_reported_with_line_and_column_and_still_written(
    name: str, make_builtin_system: MakeSystem, workspace: Path
) -> None:
    content, problem, where = BROKEN[name]
    outcome = make_builtin_system().call_outcome("write_file", {"path": name, "content": content})
    assert outcome.status == "ok", outcome.result
    assert outcome.result.startswith(f"created {name}")
    assert problem in outcome.result and where in outcome.result, outcome.result
    assert "the file was written as given" in outcome.result
    assert (workspace / name).read_text() == content


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("ok.py", "def f(x):\n    return x\n"),
        ("ok.json", '{"a": [1, 2]}\n'),
        ("ok.toml", '[tool]\nname = "x"\n'),
        ("ok.yaml", "a: 1\n---\nb: [1, 2]\n"),
        ("tsconfig.json", '{\n  // comments are allowed here\n  "compilerOptions": {}\n}\n'),
        ("notes.txt", "{ not json\n"),
    ],
)
def test_valid_or_unchecked_files_get_no_warning(
    name: str, content: str, make_builtin_system: MakeSystem
) -> None:
    result = make_builtin_system().call("write_file", {"path": name, "content": content})
    assert result.startswith(f"created {name}") and "warning" not in result, result


def test_refuse_mode_writes_nothing(make_builtin_system: MakeSystem, workspace: Path) -> None:
    system = make_builtin_system(config={"plugins": {"file": {"format_check": "refuse"}}})
    (workspace / "config.json").write_text('{"a": 1}\n')
    outcome = system.call_outcome("write_file", {"path": "config.json", "content": '{"a": 1,}\n'})
    assert outcome.status == "error" and "line 1, column 9" in outcome.result
    assert "nothing was written ([plugins.file] format_check" in outcome.result
    assert (workspace / "config.json").read_text() == '{"a": 1}\n'
    assert not system.call_outcome("write_file", {"path": "new.py", "content": "x = (\n"}).ok
    assert not (workspace / "new.py").exists()


def test_off_mode_checks_nothing(make_builtin_system: MakeSystem) -> None:
    system = make_builtin_system(config={"plugins": {"file": {"format_check": "off"}}})
    assert "warning" not in system.call("write_file", {"path": "x.json", "content": "{"})
    bad = make_builtin_system(config={"plugins": {"file": {"format_check": "loud"}}})
    outcome = bad.call_outcome("write_file", {"path": "y.json", "content": "{}"})
    assert outcome.status == "error" and "format_check must be one of warn, refuse, off" in outcome.result


def test_patch_reports_the_problem_it_introduced(make_builtin_system: MakeSystem, workspace: Path) -> None:
    system = make_builtin_system()
    (workspace / "app.py").write_text("def f(x):\n    return x\n")
    out = system.call("patch", {"path": "app.py", "old_string": "return x", "new_string": "return (x"})
    assert out.startswith("patched app.py") and "not valid Python" in out and "line 2" in out, out
    assert "already invalid" not in out
    assert (workspace / "app.py").read_text() == "def f(x):\n    return (x\n"
    again = system.call("patch", {"path": "app.py", "old_string": "def f(x)", "new_string": "def g(x)"})
    assert "already invalid before this edit" in again


def test_refuse_mode_still_lets_a_broken_file_be_fixed(
    make_builtin_system: MakeSystem, workspace: Path
) -> None:
    system = make_builtin_system(config={"plugins": {"file": {"format_check": "refuse"}}})
    (workspace / "data.json").write_text('{"a": [1, 2}\n')
    out = system.call_outcome("patch", {"path": "data.json", "old_string": '"a"', "new_string": '"b"'})
    assert out.ok and "already invalid" in out.result  # an already broken file may be edited step by step
    fixed = system.call_outcome("patch", {"path": "data.json", "old_string": "2}", "new_string": "2]}"})
    assert fixed.ok and "warning" not in fixed.result
    broke = system.call_outcome("patch", {"path": "data.json", "old_string": "2]}", "new_string": "2]"})
    assert broke.status == "error" and (workspace / "data.json").read_text() == '{"b": [1, 2]}\n'


def test_a_multi_file_patch_that_breaks_one_file_writes_none_in_refuse_mode(
    make_builtin_system: MakeSystem, workspace: Path
) -> None:
    system = make_builtin_system(config={"plugins": {"file": {"format_check": "refuse"}}})
    (workspace / "a.yaml").write_text("a: 1\n")
    patch = (
        "*** Begin Patch\n*** Update File: a.yaml\n-a: 1\n+a: 2\n*** Add File: b.toml\n+key = \n*** End Patch"
    )
    outcome = system.call_outcome("patch", {"mode": "patch", "patch": patch})
    assert outcome.status == "error" and "b.toml is not valid TOML" in outcome.result
    assert (workspace / "a.yaml").read_text() == "a: 1\n" and not (workspace / "b.toml").exists()
    warn = make_builtin_system().call("patch", {"mode": "patch", "patch": patch})
    assert "applied patch: 2 files" in warn and "b.toml is not valid TOML" in warn


def test_checking_never_runs_the_content(
    make_builtin_system: MakeSystem, workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    system = make_builtin_system()
    code = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
    assert "warning" not in system.call("write_file", {"path": "evil.py", "content": code})
    yaml_attack = f"x: !!python/object/apply:os.system ['touch {marker}']\n"
    assert "warning" not in system.call("write_file", {"path": "evil.yaml", "content": yaml_attack})
    assert not marker.exists()
