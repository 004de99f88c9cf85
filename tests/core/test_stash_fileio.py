"""The per-system stash and atomic writes: the shared building blocks plugins use for state and files."""

from __future__ import annotations

import os
import threading

import pytest

from hermes_core import CallContext, ToolSystem
from hermes_core.fileio import atomic_write


class _Client:
    def __init__(self, log: list[str], name: str) -> None:
        self.log = log
        self.name = name

    def close(self) -> None:
        self.log.append(f"closed {self.name}")


def test_stash_is_per_system_and_closed_with_it() -> None:
    log: list[str] = []
    one = ToolSystem.load(plugins_dir=False, load_entry_points=False, mcp=False)
    two = ToolSystem.load(plugins_dir=False, load_entry_points=False, mcp=False)
    a = one.stash("demo.client", lambda: _Client(log, "a"))
    assert one.stash("demo.client", lambda: _Client(log, "again")) is a
    b = two.stash("demo.client", lambda: _Client(log, "b"))
    assert a is not b
    one.stash("demo.other", lambda: {"x": 1}, cleanup=lambda v: log.append(f"cleanup {v['x']}"))
    one.close()
    assert log == ["cleanup 1", "closed a"]  # newest first
    with pytest.raises(RuntimeError, match="closed"):
        one.stash("demo.late", object)
    two.close()
    assert log[-1] == "closed b"


def test_stash_factory_runs_once_under_contention() -> None:
    calls: list[int] = []
    barrier = threading.Barrier(4)
    with ToolSystem.load(plugins_dir=False, load_entry_points=False, mcp=False) as system:

        def make() -> object:
            calls.append(1)
            return object()

        def worker(out: list[object]) -> None:
            barrier.wait()
            out.append(system.stash("demo.once", make))

        out: list[object] = []
        threads = [threading.Thread(target=worker, args=(out,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(calls) == 1 and len({id(o) for o in out}) == 1


def test_unstash_cleans_up_and_allows_a_fresh_value() -> None:
    log: list[str] = []
    with ToolSystem.load(plugins_dir=False, load_entry_points=False, mcp=False) as system:
        first = system.stash("demo.c", lambda: _Client(log, "1"))
        system.unstash("demo.c")
        assert log == ["closed 1"]
        assert system.stash("demo.c", lambda: _Client(log, "2")) is not first
    assert log == ["closed 1", "closed 2"]


def test_context_without_system_has_a_process_stash() -> None:
    ctx = CallContext()
    value = ctx.stash("demo.unbound", object)
    assert CallContext().stash("demo.unbound", object) is value


def test_atomic_write_keeps_mode_and_leaves_no_temp_on_failure(tmp_path) -> None:
    target = tmp_path / "sub" / "f.txt"
    assert atomic_write(target, "one") is False
    os.chmod(target, 0o640)
    assert atomic_write(target, b"two") is True
    assert target.read_bytes() == b"two"
    assert (target.stat().st_mode & 0o777) == 0o640

    with pytest.raises(IsADirectoryError):
        atomic_write(tmp_path / "sub", "x")
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["f.txt"]
