"""Big files through ``read_file`` and ``write_file``, each beside the plain Python that does the same job.

- ``read_file`` of the first page (500 lines) of a 1 MB file through the whole pipeline (path guard, the page,
  redaction of the result) against a direct page read: open, the first 500 lines, numbered. Target: at most 5x.
- The same first page of a 100 MB file. Target: under 20 ms (the page is all that is read and decoded).
- ``write_file`` of 10 MB (arguments parsed and validated; written atomically: a temporary file renamed over the
  old one) against a plain ``open(path, "w").write(text)``. Target: at most 3x. A file over ``[plugins.file]
  fsync_mb`` (default 1 MB) is renamed into place without waiting for the disk, so the same write is also timed
  with ``fsync_mb = 32`` beside a plain write followed by ``os.fsync``: there the disk is the floor.

Subjects and baselines alternate round after round; min and median of each, and the ratios.
Run: ``python benchmarks/bench_files.py [rounds]``.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import line, ratio

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))

import hermes_builtin.plugin
from hermes_core import ToolSystem

WORDS = [
    "request",
    "served",
    "user",
    "cache",
    "miss",
    "hit",
    "store",
    "query",
    "index",
    "table",
    "shard",
    "replica",
    "worker",
    "queue",
    "job",
]


def log_lines(size: int, rng: random.Random) -> str:
    out: list[str] = []
    total = 0
    i = 0
    while total < size:
        i += 1
        text = f"2026-12-03T10:{i % 60:02d}:{i % 60:02d}Z INFO {' '.join(rng.choices(WORDS, k=9))} id={i} ms={rng.randint(1, 999)}\n"
        out.append(text)
        total += len(text)
    return "".join(out)


def direct_page(path: Path) -> str:
    with open(path, encoding="utf-8") as fh:
        return "\n".join(f"{n:6d}|{text.rstrip()}" for n, text in enumerate(itertools.islice(fh, 500), 1))


def timed(subjects: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {label: [] for label in subjects}
    for fn in subjects.values():
        fn()
    labels = list(subjects)
    for r in range(rounds):
        for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
            start = time.perf_counter()
            subjects[label]()
            times[label].append((time.perf_counter() - start) * 1000)
    return times


def report(title: str, times: dict[str, list[float]], base: str, subject: str, target: str) -> None:
    lo, mid = ratio(times[subject], times[base])
    print(title)
    print(line(f"  {base}", times[base], "ms"))
    print(line(f"  {subject}", times[subject], "ms", extra=f"  {lo:.2f}x / {mid:.2f}x ({target})"))


def main(rounds: int = 15) -> None:
    rng = random.Random(27)
    ws = Path(tempfile.mkdtemp(prefix="hermes-bench-files-"))
    (ws / "one.log").write_text(log_lines(1_000_000, rng))
    chunk = log_lines(1_000_000, rng)
    with open(ws / "hundred.log", "w") as fh:
        for _ in range(100):
            fh.write(chunk)
    system = ToolSystem.load(
        plugins_dir=False, load_entry_points=False, plugins=[hermes_builtin.plugin], workspace=ws
    )
    synced = ToolSystem.load(
        plugins_dir=False,
        load_entry_points=False,
        plugins=[hermes_builtin.plugin],
        workspace=ws,
        config={"plugins": {"file": {"fsync_mb": 32}}},
    )
    first = system.call("read_file", {"path": "one.log"})
    assert first.splitlines()[-1].startswith("[one.log: lines 1-500"), first.splitlines()[-1]

    times = timed(
        {
            "direct page read": lambda: direct_page(ws / "one.log"),
            "read_file page 1": lambda: system.call("read_file", {"path": "one.log"}),
        },
        rounds,
    )
    report(
        "first page (500 lines) of a 1 MB file", times, "direct page read", "read_file page 1", "target <= 5x"
    )

    times = timed(
        {
            "direct page read": lambda: direct_page(ws / "hundred.log"),
            "read_file page 1": lambda: system.call("read_file", {"path": "hundred.log"}),
        },
        rounds,
    )
    report(
        "first page (500 lines) of a 100 MB file",
        times,
        "direct page read",
        "read_file page 1",
        "x the direct read",
    )
    print(f"  read_file page 1 of 100 MB: min {min(times['read_file page 1']):.2f} ms (target < 20 ms)")

    content = log_lines(10_000_000, rng)
    arguments = {"path": "written.log", "content": content}
    as_json = json.dumps(arguments)

    def plain() -> None:
        with open(ws / "plain.log", "w", encoding="utf-8") as fh:
            fh.write(content)

    def plain_fsync() -> None:
        with open(ws / "plain-synced.log", "w", encoding="utf-8") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())

    def through_the_tool_synced() -> None:
        out = synced.call("write_file", {"path": "synced.log", "content": content})
        assert out.startswith(("created", "replaced")), out[:300]

    def through_the_tool() -> None:
        out = system.call("write_file", arguments)
        assert out.startswith(("created", "replaced")), out[:300]

    def from_json() -> None:
        out = system.call("write_file", as_json)
        assert out.startswith(("created", "replaced")), out[:300]

    def decode_only() -> None:
        json.loads(as_json)

    times = timed(
        {
            "plain write": plain,
            "write_file": through_the_tool,
            "write_file, JSON": from_json,
            "json.loads": decode_only,
        },
        rounds,
    )
    report(
        f"write {len(content) / 1e6:.1f} MB (arguments as a dict)",
        times,
        "plain write",
        "write_file",
        "target <= 3x",
    )
    print(line("  write_file, arguments as JSON text", times["write_file, JSON"], "ms"))
    print(line("  json.loads of those arguments alone", times["json.loads"], "ms"))

    times = timed(
        {"plain write + fsync": plain_fsync, "write_file, fsync_mb = 32": through_the_tool_synced}, rounds
    )
    report(
        f"write {len(content) / 1e6:.1f} MB synced to disk",
        times,
        "plain write + fsync",
        "write_file, fsync_mb = 32",
        "the disk is the floor",
    )
    synced.close()
    system.close()
    shutil.rmtree(ws, ignore_errors=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
