"""The file tools at scale, through ``ToolSystem.call``: listings a page at a time, pages of big files, big writes.

No timing here (``benchmarks/bench_listing.py`` and ``bench_files.py`` measure): these tests prove the results
are right and the work stops where the page does.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes_core import ToolSystem

MakeSystem = Callable[..., ToolSystem]

pytestmark = pytest.mark.usefixtures("fake_home")

ENGINES = ["python", pytest.param("rg", marks=pytest.mark.skipif(shutil.which("rg") is None, reason="no rg"))]


def _tree(root: Path, files: int) -> list[str]:
    """``files`` files over nested folders, plus a guarded .env and an ignored folder; the listing's order."""
    names = []
    for i in range(files):
        rel = f"p{i % 7}/m{i % 3}/f{i:04d}.txt"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
        names.append(rel)
    (root / "p0" / ".env").write_text("TOKEN=x\n")
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("x\n")
    (root / ".gitignore").write_text("build/\n")
    names.append(".gitignore")
    # ripgrep's own order: each folder's entries by name, depth first
    return sorted(names, key=lambda rel: [part.encode() for part in rel.split("/")])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_listing_pages_through_every_file_once_in_tree_order(
    make_builtin_system: MakeSystem, workspace: Path, engine: str
) -> None:
    expected = _tree(workspace, 230)
    system = make_builtin_system(config={"plugins": {"file": {"search_engine": engine}}})
    shown: list[str] = []
    offset = 0
    while True:
        out = system.call("search_files", {"pattern": "*", "target": "files", "limit": 50, "offset": offset})
        *body, footer = out.splitlines()
        shown += body
        if "more follow" in footer:
            assert (
                footer == f"[files {offset + 1}-{offset + 50}; more follow, next page: offset={offset + 50}]"
            )
            offset += 50
            continue
        assert footer == f"[files {offset + 1}-{len(expected)} of {len(expected)}]"
        break
    assert shown == expected  # no .env (guarded), nothing from build/ (ignored), no repeats, no gaps
    outcome = system.call_outcome("search_files", {"pattern": "*", "target": "files", "offset": 500})
    assert outcome.status == "error" and f"({len(expected)} files)" in outcome.result


def test_both_engines_list_the_same_pages(make_builtin_system: MakeSystem, workspace: Path) -> None:
    if shutil.which("rg") is None:
        pytest.skip("ripgrep is not installed")
    _tree(workspace, 120)
    pages = {}
    for engine in ("python", "rg"):
        system = make_builtin_system(config={"plugins": {"file": {"search_engine": engine}}})
        pages[engine] = [
            system.call("search_files", {"pattern": p, "target": "files", "limit": 17, "offset": o})
            for p in ("*", "f00*", "m1/*", "*.txt")
            for o in (0, 17, 34)
        ]
    assert pages["python"] == pages["rg"]


@pytest.mark.parametrize("engine", ["python", "rg"])
def test_a_listing_stops_when_the_page_is_full(workspace: Path, engine: str) -> None:
    """Page 1 asks about the page's files and one more, not about every file of the tree."""
    from hermes_builtin.tools.files._listing import list_files
    from hermes_builtin.tools.files._search import rg_available

    if engine == "rg" and rg_available() is None:
        pytest.skip("ripgrep is not installed")
    _tree(workspace, 600)
    asked: list[str] = []

    def allowed(path: str) -> bool:
        asked.append(path)
        return True

    page = list_files(str(workspace), "*", offset=0, limit=10, engine=engine, allowed=allowed, timeout=30)
    assert page.engine == engine and page.more and page.total is None
    assert len(page.paths) == 10 and len(asked) == 11
    rest = list_files(
        str(workspace), "*", offset=590, limit=50, engine=engine, allowed=lambda p: True, timeout=30
    )
    assert not rest.more and rest.total == 602 and len(rest.paths) == 12  # with .gitignore and .env
