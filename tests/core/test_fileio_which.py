"""``hermes_core.fileio.which`` finds what ``shutil.which`` finds (the checks use it to keep shutil out of start-up)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hermes_core.fileio import which


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "plain").write_text("not executable")
    (one / "tool").mkdir()  # a folder named like a program is not one
    (two / "tool").write_text("#!/bin/sh\n")
    (two / "tool").chmod(0o755)
    (two / "plain").write_text("#!/bin/sh\n")
    (two / "plain").chmod(0o755)
    return one, two


@pytest.mark.parametrize("name", ["tool", "plain", "missing", "sh", "bash"])
def test_the_same_answer_as_shutil(folders: tuple[Path, Path], name: str) -> None:
    one, two = folders
    for path in (f"{one}{os.pathsep}{two}", f"{two}{os.pathsep}{one}", f"{one}{os.pathsep}{one}", "", None):
        assert which(name, path) == shutil.which(name, path=path), (name, path)


def test_a_name_with_a_folder_is_judged_as_it_is(folders: tuple[Path, Path]) -> None:
    one, two = folders
    assert which(str(two / "tool")) == str(two / "tool")
    assert which(str(one / "plain")) is None and shutil.which(str(one / "plain")) is None
    assert which(str(one / "tool")) is None  # a folder


def test_path_from_the_environment(folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _one, two = folders
    monkeypatch.setenv("PATH", str(two))
    assert which("tool") == str(two / "tool") == shutil.which("tool")
    assert which("sh") is None
