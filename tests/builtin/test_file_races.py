"""No check-then-use races in the file tools: while a thread keeps swapping a workspace directory for a symbolic
link to a guarded place, ``read_file`` never returns the guarded secret and ``write_file``/``patch`` never land
a byte outside the workspace. The path the guard checked is the path that is opened, or the call fails."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hermes_core import ToolSystem, fileio

SECRET = "PRIVATE-KEY-MATERIAL-7f3a"
ROUNDS_SECONDS = 1.5


@contextmanager
def flipping(link: Path, target: Path) -> Iterator[list[int]]:
    """Swap ``link`` between the real directory it is and a symlink to ``target`` until the block ends."""
    parked = link.with_name(link.name + ".parked")
    stop = threading.Event()
    flips = [0]

    def set_aside() -> None:  # a write made the missing directory meanwhile (inside the workspace): move it
        os.rename(link, link.with_name(f"{link.name}.made-{flips[0]}-{time.monotonic_ns()}"))

    def run() -> None:
        while not stop.is_set():
            os.rename(link, parked)
            while True:
                try:
                    os.symlink(target, link)
                    break
                except FileExistsError:
                    set_aside()
            time.sleep(0)
            os.unlink(link)
            while True:
                try:
                    os.rename(parked, link)
                    break
                except OSError:
                    set_aside()
            flips[0] += 1
            time.sleep(0)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield flips
    finally:
        stop.set()
        thread.join(5)


def repeat(call: Callable[[], str]) -> list[str]:
    results = []
    deadline = time.monotonic() + ROUNDS_SECONDS
    while time.monotonic() < deadline:
        results.append(call())
    return results


@pytest.fixture(params=["openat2", "walk"])
def nofollow_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both implementations: the kernel's openat2, and the O_NOFOLLOW walk used where it is missing."""
    if request.param == "walk":
        monkeypatch.setitem(fileio._openat2_state, "call", None)
    elif fileio._openat2_call() is None:
        pytest.skip("this kernel has no openat2")
    return str(request.param)


def test_a_read_never_returns_the_swapped_in_secret(
    builtin_system: ToolSystem, workspace: Path, fake_home: Path, nofollow_mode: str
) -> None:
    (fake_home / ".ssh" / "id_ed25519").write_text(SECRET + "\n")
    sub = workspace / "sub"
    sub.mkdir()
    (sub / "id_ed25519").write_text("an ordinary file of the project\n")
    with flipping(sub, fake_home / ".ssh") as flips:
        results = repeat(lambda: builtin_system.call("read_file", {"path": "sub/id_ed25519"}))
    assert flips[0] > 50, "the race was not exercised"
    assert not [r for r in results if SECRET in r]
    assert any("an ordinary file" in r for r in results)  # the checked file is still readable between swaps


def test_a_write_never_lands_outside(
    builtin_system: ToolSystem, workspace: Path, fake_home: Path, nofollow_mode: str
) -> None:
    outside = fake_home / "Documents"
    outside.mkdir()
    out = workspace / "out"
    out.mkdir()
    counter = iter(range(10**6))
    with flipping(out, outside) as flips:
        results = repeat(
            lambda: builtin_system.call(
                "write_file", {"path": f"out/planted-{next(counter)}.txt", "content": "x"}
            )
        )
    assert flips[0] > 50, "the race was not exercised"
    assert list(outside.iterdir()) == []
    written = [r for r in results if r.startswith("created")]
    assert written and len(list(workspace.rglob("planted-*.txt"))) == len(written)
    assert not list(workspace.rglob(".*.tmp"))  # no temporary file left behind by a failed write


def test_a_patch_never_edits_the_swapped_in_file(
    builtin_system: ToolSystem, workspace: Path, fake_home: Path, nofollow_mode: str
) -> None:
    outside = fake_home / "Documents"
    outside.mkdir()
    (outside / "notes.txt").write_text("keep = 1\n")
    cfg = workspace / "cfg"
    cfg.mkdir()
    (cfg / "notes.txt").write_text("keep = 1\n")
    flip = iter(range(10**6))

    def edit() -> str:
        n = next(flip)
        old, new = ("keep = 1", "keep = 2") if n % 2 == 0 else ("keep = 2", "keep = 1")
        return builtin_system.call("patch", {"path": "cfg/notes.txt", "old_string": old, "new_string": new})

    with flipping(cfg, outside) as flips:
        repeat(edit)
    assert flips[0] > 50
    assert (outside / "notes.txt").read_text() == "keep = 1\n"
    assert sorted(p.name for p in outside.iterdir()) == ["notes.txt"]


def test_symlinks_checked_by_the_guard_still_work(builtin_system: ToolSystem, workspace: Path) -> None:
    (workspace / "real.txt").write_text("through the link\n")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    (workspace / "src").mkdir()
    (workspace / "lnk").symlink_to(workspace / "src")
    assert "through the link" in builtin_system.call("read_file", {"path": "alias.txt"})
    assert builtin_system.call("write_file", {"path": "lnk/new.txt", "content": "hi"}).startswith("created")
    assert (workspace / "src" / "new.txt").read_text() == "hi"
    assert (workspace / "alias.txt").is_symlink()  # writing through the alias replaces the file it names
    builtin_system.call("write_file", {"path": "alias.txt", "content": "new"})
    assert (workspace / "alias.txt").is_symlink() and (workspace / "real.txt").read_text() == "new"


def test_a_fifo_is_refused_without_blocking(builtin_system: ToolSystem, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    assert "not a regular file" in builtin_system.call("read_file", {"path": "pipe"})
