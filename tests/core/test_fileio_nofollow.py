"""``hermes_core.fileio``'s no-symlink primitives, in both implementations (openat2 and the O_NOFOLLOW walk)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from hermes_core import fileio
from hermes_core.fileio import (
    SymlinkError,
    atomic_write_nofollow,
    open_dir_nofollow,
    open_nofollow,
    unlink_nofollow,
)


@pytest.fixture(params=["openat2", "walk"], autouse=True)
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "walk":
        monkeypatch.setitem(fileio._openat2_state, "call", None)
    elif fileio._openat2_call() is None:
        pytest.skip("this kernel has no openat2")
    return str(request.param)


def test_a_link_anywhere_in_the_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("data")
    (tmp_path / "dirlink").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "filelink").symlink_to(tmp_path / "real" / "f.txt")
    fd = open_nofollow(tmp_path / "real" / "f.txt")
    assert os.read(fd, 10) == b"data"
    os.close(fd)
    for path in (tmp_path / "dirlink" / "f.txt", tmp_path / "real" / "filelink"):
        with pytest.raises(SymlinkError) as caught:
            os.close(open_nofollow(path))
        assert caught.value.errno == errno.ELOOP
    with pytest.raises(SymlinkError):
        os.close(open_dir_nofollow(tmp_path / "dirlink"))
    with pytest.raises(SymlinkError):
        atomic_write_nofollow(tmp_path / "dirlink" / "new.txt", "x")
    with pytest.raises(SymlinkError):
        atomic_write_nofollow(tmp_path / "real" / "filelink", "x")  # the last part too
    assert (
        not (tmp_path / "real" / "new.txt").exists() and (tmp_path / "real" / "f.txt").read_text() == "data"
    )


def test_only_resolved_absolute_paths_are_taken(tmp_path: Path) -> None:
    for bad in ("relative/x", f"{tmp_path}/../x", f"{tmp_path}/./x"):
        with pytest.raises(ValueError):
            open_nofollow(bad)


def test_atomic_write_creates_parents_keeps_mode_and_unlink_removes(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c.txt"
    assert atomic_write_nofollow(target, "one") is False
    os.chmod(target, 0o640)
    assert atomic_write_nofollow(target, b"two") is True
    assert target.read_text() == "two" and stat.S_IMODE(target.stat().st_mode) == 0o640
    with pytest.raises(IsADirectoryError):
        atomic_write_nofollow(tmp_path / "a", "x")
    with pytest.raises(FileNotFoundError):
        atomic_write_nofollow(tmp_path / "missing" / "x.txt", "x", create_parents=False)
    unlink_nofollow(target)
    assert not target.exists() and sorted(os.listdir(target.parent)) == []
