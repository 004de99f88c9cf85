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


# -- read_file: only what the page needs ----------------------------------------------------------------


def _reference(data: bytes, encoding: str, offset: int, limit: int) -> tuple[list[str], int]:
    """The page as universal newlines read it, the slow and obvious way, and the number of lines."""
    import io

    lines = io.TextIOWrapper(io.BytesIO(data), encoding=encoding, errors="replace", newline=None).readlines()
    page = [f"{n:6d}|{line.rstrip(chr(10))}" for n, line in enumerate(lines, 1)][
        offset - 1 : offset - 1 + limit
    ]
    return page, len(lines)


def test_pages_match_universal_newlines_at_every_chunk_boundary(tmp_path: Path) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from hermes_builtin.tools.files import _paging

    ends = st.sampled_from(["\n", "\r\n", "\r"])
    lines = st.lists(st.tuples(st.text("ab\u00e9\u4e2d ", max_size=6), ends), min_size=1, max_size=30)
    counter = iter(range(100_000))

    @settings(max_examples=200, deadline=None)
    @given(body=lines, last_end=st.booleans(), offset=st.integers(1, 35), limit=st.integers(1, 8))
    def check(body: list[tuple[str, str]], last_end: bool, offset: int, limit: int) -> None:
        text = "".join(t + e for t, e in body)
        if not last_end:
            text += "tail"
        data = text.encode("utf-8")
        path = tmp_path / f"f{next(counter)}.txt"
        path.write_bytes(data)
        page, total = _reference(data, "utf-8", offset, limit)
        for chunk, page_bytes in (
            (1, 1 << 23),
            (2, 1 << 23),
            (3, 1),
            (7, 1 << 23),
            (1 << 20, 1 << 23),
            (1 << 20, 1),
        ):
            _paging._CHUNK = chunk  # line ends split across reads, "\r\n" included
            _paging.PAGE_BYTES = page_bytes  # 1: the page decoded line by line, as lines of megabytes are
            try:
                with open(path, "rb") as raw:
                    if offset > total:
                        with pytest.raises(_paging.PastTheEnd) as end:
                            _paging.read_page(raw, path, "f", offset, limit)
                        assert end.value.total == total
                        continue
                    out = _paging.read_page(raw, path, "f", offset, limit).splitlines()
            finally:
                _paging._CHUNK, _paging.PAGE_BYTES = 1 << 20, 8 * 1024 * 1024
            last = offset + len(page) - 1
            footer = f"[f: lines {offset}-{last} of {total}" + (
                f"; next page: offset={last + 1}]" if last < total else "]"
            )
            assert out == [*page, footer], (chunk, text)

    check()


def test_line_numbers_are_right_on_every_page_wherever_it_starts(
    builtin_system: ToolSystem, workspace: Path
) -> None:
    """The number column is made ahead in blocks of lines: pages across a block's edge, long pages, pages past
    line 999,999 (a wider column) and a page cut at ``MAX_PAGE_CHARS`` number every line as it is."""
    from hermes_builtin.tools.files.files import MAX_PAGE_CHARS

    (workspace / "many.txt").write_text("".join(f"line {i}\n" for i in range(1, 5001)))
    for offset, limit in ((1, 500), (2040, 20), (2047, 2), (4090, 2000), (4096, 1), (4999, 5)):
        out = builtin_system.call("read_file", {"path": "many.txt", "offset": offset, "limit": limit})
        last = min(offset + limit - 1, 5000)
        assert out.splitlines()[:-1] == [f"{n:6d}|line {n}" for n in range(offset, last + 1)], offset
    (workspace / "million.txt").write_text("x\n" * 1_000_002)
    out = builtin_system.call("read_file", {"path": "million.txt", "offset": 999_998, "limit": 4})
    assert out.splitlines()[:-1] == ["999998|x", "999999|x", "1000000|x", "1000001|x"]
    (workspace / "wide.txt").write_text(("y" * 1_500 + "\n") * 200)
    out = builtin_system.call("read_file", {"path": "wide.txt", "limit": 200})
    page = out.splitlines()[:-1]
    assert page == [f"{n:6d}|" + "y" * 1_500 for n in range(1, len(page) + 1)]
    assert len(out) <= MAX_PAGE_CHARS + 200 and out.endswith(f"next page: offset={len(page) + 1}]")


@pytest.mark.parametrize(
    "body",
    [
        "".join(f"line {i}\n" for i in range(1, 3001)),  # ASCII, "\n" only: the one-split path
        "".join(f"line {i}\n" for i in range(1, 3001)) + "tail",
        "".join(f"l\u00e9 {i}\r\n" for i in range(1, 3001)),
        "".join(f"line {i}\r" for i in range(1, 3001)),
        "a\x00b\n" * 50,
        "\n\n\n",
        "x" * 3000 + "\n" + "y\n" * 10,
        "".join(f"{'w' * 90} {i}\n" for i in range(1, 3001)),  # 2,000 lines pass the first 64 KiB window
    ],
)
def test_a_page_of_content_read_already_is_the_page_of_the_open_file(tmp_path: Path, body: str) -> None:
    """``read_file`` pages the bytes it read for the stale-write digest (files up to 1 MiB) instead of reading
    the file again: the page, the footer and every refusal are those of the open file."""
    from hermes_builtin.tools.files import _paging

    path = tmp_path / "f.txt"
    path.write_bytes(body.encode("utf-8"))
    for offset, limit in (
        (1, 500),
        (1, 2000),
        (999, 2000),
        (2, 3),
        (2999, 5),
        (3000, 1),
        (3001, 1),
        (4000, 1),
    ):
        results = []
        for source in (path.read_bytes(), path.open("rb")):
            try:
                results.append(_paging.read_page(source, path, "f.txt", offset, limit))
            except _paging.PastTheEnd as end:
                results.append(f"past the end: {end.total}")
        assert results[0] == results[1], (offset, limit)


def test_a_large_file_says_more_follow_without_counting(
    builtin_system: ToolSystem, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_builtin.tools.files import _paging

    monkeypatch.setattr(_paging, "COUNT_LIMIT", 10_000)
    (workspace / "big.log").write_text("".join(f"line {i}\n" for i in range(1, 5001)))
    out = builtin_system.call("read_file", {"path": "big.log", "limit": 2})
    assert out.splitlines() == [
        "     1|line 1",
        "     2|line 2",
        "[big.log: lines 1-2; file is 47.7 KB, more lines follow; next page: offset=3]",
    ]
    out = builtin_system.call("read_file", {"path": "big.log", "offset": 4999, "limit": 5})
    assert out.splitlines()[-1] == "[big.log: lines 4999-5000 of 5000]"  # the end reached: now it is known
    outcome = builtin_system.call_outcome("read_file", {"path": "big.log", "offset": 6000})
    assert outcome.status == "error" and "(5000 lines)" in outcome.result


def test_utf16_and_late_latin1_files_page_as_a_whole_file_read_would(
    builtin_system: ToolSystem, workspace: Path
) -> None:
    text = "".join(f"zeile {i} \u00e4\r\n" for i in range(1, 301))
    (workspace / "u16.txt").write_bytes(text.encode("utf-16"))
    out = builtin_system.call("read_file", {"path": "u16.txt", "offset": 299, "limit": 5})
    assert out.splitlines()[:3] == [
        "   299|zeile 299 \u00e4",
        "   300|zeile 300 \u00e4",
        "[u16.txt: lines 299-300 of 300]",
    ]
    # valid UTF-8 for the first 64 KiB, latin-1 after: the page with the latin-1 byte is read as latin-1
    head = "".join(f"ascii line {i}\n" for i in range(1, 8001)).encode()
    (workspace / "mixed.txt").write_bytes(head + "caf\u00e9\n".encode("latin-1"))
    out = builtin_system.call("read_file", {"path": "mixed.txt", "offset": 8001, "limit": 1})
    assert out.splitlines()[0] == "  8001|caf\u00e9" and "latin-1" in out


# -- write_file: big files, streamed, still atomic -------------------------------------------------------


def test_write_file_takes_ten_megabytes_and_more(builtin_system: ToolSystem, workspace: Path) -> None:
    import json

    content = "".join(f"line {i:07d} of a big generated file\n" for i in range(300_000))  # 10.5 MB
    assert len(content) > 10_000_000
    out = builtin_system.call("write_file", json.dumps({"path": "big.txt", "content": content}))
    assert out == f"created big.txt: {len(content)} bytes"  # lines are not counted past a megabyte
    assert (workspace / "big.txt").read_text() == content
    text = "\u00e9\u4e2d" * 2_500_000 + "\n"  # 5M characters, 12.5 MB in UTF-8, written a piece at a time
    out = builtin_system.call("write_file", {"path": "big.txt", "content": text})
    assert out == f"replaced big.txt: {len(text.encode())} bytes"
    assert (workspace / "big.txt").read_text(encoding="utf-8") == text
    assert [p.name for p in workspace.iterdir()] == ["big.txt"]  # no temporary file left behind


def test_write_file_counts_lines_up_to_a_megabyte(builtin_system: ToolSystem, workspace: Path) -> None:
    """The result names the lines of a text of up to COUNT_LINES_UP_TO characters (counting more would cost as
    much as the write); the bytes are always there."""
    from hermes_builtin.tools.files.files import COUNT_LINES_UP_TO

    line = "x" * 63 + "\n"
    exact = line * (COUNT_LINES_UP_TO // len(line))
    assert len(exact) == COUNT_LINES_UP_TO
    out = builtin_system.call("write_file", {"path": "a.txt", "content": exact})
    assert out == f"created a.txt: {len(exact)} bytes, {COUNT_LINES_UP_TO // 64} lines"
    out = builtin_system.call("write_file", {"path": "a.txt", "content": exact + "y"})
    assert out == f"replaced a.txt: {len(exact) + 1} bytes"
    assert (workspace / "a.txt").read_text() == exact + "y"
    out = builtin_system.call("write_file", {"path": "b.txt", "content": "one\ntwo"})
    assert out == "created b.txt: 7 bytes, 2 lines"


def test_write_file_size_is_configurable_and_refusals_lose_nothing(
    make_builtin_system: MakeSystem, workspace: Path
) -> None:
    system = make_builtin_system(config={"limits": {"tools": {"write_file": {"max_argument_chars": 1000}}}})
    (workspace / "keep.txt").write_text("old\n")
    outcome = system.call_outcome("write_file", {"path": "keep.txt", "content": "x" * 2000})
    assert outcome.status == "error" and "1000" in outcome.result
    assert (workspace / "keep.txt").read_text() == "old\n"
    half = "ok\n" * 100 + "\ud800"  # a lone surrogate at the end: found while streaming, nothing replaced
    outcome = system.call_outcome("write_file", {"path": "keep.txt", "content": half * 3000})
    assert outcome.status == "error"
    system = make_builtin_system()
    outcome = system.call_outcome(
        "write_file", {"path": "keep.txt", "content": ("ok\n" * 400_000) + "\ud800"}
    )
    assert outcome.status == "error" and "invalid Unicode" in outcome.result
    assert (workspace / "keep.txt").read_text() == "old\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["keep.txt"]
    # other tools keep the ordinary cap on a single string
    outcome = system.call_outcome("search_files", {"pattern": "x" * 300_000})
    assert outcome.status == "error" and outcome.error_kind == "invalid_arguments"


def test_small_files_are_synced_and_big_ones_are_not_waited_for(
    make_builtin_system: MakeSystem, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from hermes_core import fileio

    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(fileio.os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    system = make_builtin_system()
    system.call("write_file", {"path": "small.txt", "content": "x" * 1000})
    assert synced  # file (and its directory) synced before the rename
    synced.clear()
    system.call("write_file", {"path": "big.txt", "content": "x" * 2_000_000})
    assert synced == [] and (workspace / "big.txt").stat().st_size == 2_000_000
    always = make_builtin_system(config={"plugins": {"file": {"fsync_mb": 100}}})
    always.call("write_file", {"path": "big.txt", "content": "y" * 2_000_000})
    assert synced and (workspace / "big.txt").read_text() == "y" * 2_000_000
    bad = make_builtin_system(config={"plugins": {"file": {"fsync_mb": "lots"}}})
    outcome = bad.call_outcome("write_file", {"path": "big.txt", "content": "z"})
    assert outcome.status == "error" and "fsync_mb" in outcome.result
    assert (workspace / "big.txt").read_text() == "y" * 2_000_000
