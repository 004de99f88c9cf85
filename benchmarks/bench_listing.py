"""Listing one page of a big tree with ``search_files`` (target "files") against ``rg --files`` of the same tree.

Two generated trees, 10,000 and 100,000 files (source-like: packages of modules of files, a ``.gitignore``).
The baseline is a fresh ``rg --files`` of the whole tree (ripgrep cannot stop at a page); the subject is one page
of 50 files through the whole pipeline of a loaded system (path guard, judge of every listed file, redaction of
the result), which walks in ripgrep's own order and stops once the page is full. They alternate round after
round. Targets: at most 2x ``rg --files`` on 10,000 files, at most 1.5x on 100,000. Also printed: the path
guard's cost per file, ``check_path`` against one ``PathJudge`` for the whole listing, at depths 2, 8 and 16.
Run: ``python benchmarks/bench_listing.py [rounds]``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import interleave, line, ratio

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))

import hermes_builtin.plugin
from hermes_builtin.tools.files._search import rg_available
from hermes_core import ToolSystem
from hermes_core.security import PathJudge, check_path


def make_tree(root: Path, files: int) -> None:
    per_module, modules = 100, 50
    packages = files // (per_module * modules)
    for p in range(packages):
        for m in range(modules):
            folder = root / f"pkg{p:03d}" / f"mod{m:02d}"
            folder.mkdir(parents=True)
            for f in range(per_module):
                (folder / f"file{f:03d}.py").write_text("x = 1\n")
    (root / ".gitignore").write_text("*.pyc\nbuild/\n")


def listing(rounds: int, files: int, target: float) -> None:
    tree = Path(tempfile.mkdtemp(prefix=f"hermes-bench-tree{files}-"))
    make_tree(tree, files)
    rg = rg_available()
    assert rg is not None, "ripgrep is needed for the baseline"
    system = ToolSystem.load(
        plugins_dir=False, load_entry_points=False, plugins=[hermes_builtin.plugin], workspace=tree
    )
    page = system.call("search_files", {"pattern": "*", "target": "files"})
    assert page.splitlines()[-1] == "[files 1-50; more follow, next page: offset=50]", page[-200:]
    times: dict[str, list[float]] = {"rg --files": [], "search_files page 1": []}
    for r in range(rounds):
        for label in list(times) if r % 2 == 0 else list(times)[::-1]:
            start = time.perf_counter()
            if label == "rg --files":
                subprocess.run([rg, "--files", str(tree)], stdout=subprocess.DEVNULL, check=True)
            else:
                system.call("search_files", {"pattern": "*", "target": "files"})
            times[label].append((time.perf_counter() - start) * 1000)
    base, sub = times["rg --files"], times["search_files page 1"]
    lo, mid = ratio(sub, base)
    print(f"{files:,} files, {rounds} interleaved rounds")
    print(line(f"  rg --files (whole tree, {files:,})", base, "ms"))
    print(
        line(
            "  search_files target=files, page 1",
            sub,
            "ms",
            extra=f"  {lo:.2f}x / {mid:.2f}x (target <= {target}x)",
        )
    )
    system.close()
    shutil.rmtree(tree, ignore_errors=True)


def guard_per_file(rounds: int) -> None:
    ws = Path(tempfile.mkdtemp(prefix="hermes-bench-depth-"))
    for depth in (2, 8, 16):
        folder = ws.joinpath(*[f"d{i}" for i in range(depth - 1)])
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for i in range(200):
            (folder / f"f{i}.txt").write_text("x")
            paths.append(str(folder / f"f{i}.txt"))

        def one_by_one(paths: list[str] = paths) -> None:
            for p in paths:
                check_path(p, "read", ws)

        def judged(paths: list[str] = paths) -> None:
            judge = PathJudge("read", ws)
            for p in paths:
                judge.check(p)

        samples = interleave({"check_path": one_by_one, "PathJudge": judged}, 1, rounds)
        per = {k: [v / len(paths) for v in vs] for k, vs in samples.items()}
        lo, mid = ratio(per["PathJudge"], per["check_path"])
        print(f"path guard per file at depth {depth}:")
        print(line("  check_path", per["check_path"], "us", 1000))
        print(
            line("  PathJudge (one per listing)", per["PathJudge"], "us", 1000, f"  {lo:.2f}x / {mid:.2f}x")
        )
    shutil.rmtree(ws, ignore_errors=True)


def main(rounds: int = 15) -> None:
    listing(rounds, 10_000, 2.0)
    listing(rounds, 100_000, 1.5)
    guard_per_file(rounds)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
