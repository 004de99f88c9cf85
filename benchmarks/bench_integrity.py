"""What issue 16's protections cost, each beside its baseline, interleaved in one run (min and median of rounds):

- the command guard over the whole security corpus, with and without the protected-state checks;
- ``check_path`` against ``os.path.realpath`` alone (the part it cannot avoid);
- reading and writing a 64 KB file with the no-symlink primitives against plain ``open``/``atomic_write``.

Run: .venv/bin/python benchmarks/bench_integrity.py
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "security"))

from security_corpus import load_corpus  # noqa: E402

from hermes_core import fileio  # noqa: E402
from hermes_core.security import _analyze, _protected, _rules, _targets, check_path, classify_command  # noqa: E402

ROUNDS = 7


def timed(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number * 1e6


def compare(
    label: str,
    baseline: tuple[str, Callable[[], object]],
    subject: tuple[str, Callable[[], object]],
    number: int,
) -> None:
    base, subj = [], []
    for _ in range(ROUNDS):  # interleaved, so load on the machine hits both alike
        base.append(timed(baseline[1], number))
        subj.append(timed(subject[1], number))
    bmin, bmed, smin, smed = min(base), statistics.median(base), min(subj), statistics.median(subj)
    print(
        f"{label}: {subject[0]} min {smin:.1f} us, median {smed:.1f} us | {baseline[0]} min {bmin:.1f} us, "
        f"median {bmed:.1f} us | ratio (median) {smed / bmed:.2f}x"
    )


def main() -> None:
    home = tempfile.mkdtemp(prefix="bench-integrity-")
    os.environ["HERMES_HOME"] = os.path.join(home, "hermes")
    ws = os.path.join(home, "ws")
    os.makedirs(ws)
    commands = load_corpus("dangerous.txt") + load_corpus("ordinary.txt")

    def corpus() -> None:
        for cmd in commands:
            classify_command(cmd, workspace=ws)

    saved = (
        _rules.command_findings,
        _targets._hermes_state,
        _analyze.protected_code,
        _protected.roots_snapshot,
    )

    def without_pass() -> None:  # every protected-state check switched off
        _rules.command_findings = lambda *a: None  # type: ignore[assignment]
        _targets._hermes_state = lambda *a: None  # type: ignore[assignment]
        _analyze.protected_code = lambda *a: None  # type: ignore[assignment]
        _protected.roots_snapshot = contextlib.nullcontext  # type: ignore[assignment]
        try:
            corpus()
        finally:
            (
                _rules.command_findings,
                _targets._hermes_state,
                _analyze.protected_code,
                _protected.roots_snapshot,
            ) = saved

    corpus()
    compare(f"classify_command x{len(commands)} corpus commands (per run)", ("without the protected-state checks", without_pass),
            ("with it", corpus), 1)  # fmt: skip
    target = os.path.join(ws, "src", "module.py")
    compare("check_path(write)", ("os.path.realpath", lambda: os.path.realpath(target)),
            ("check_path", lambda: check_path(target, "write", ws)), 300)  # fmt: skip
    compare("protected_roots()", ("os.stat of one root", lambda: os.stat(home)),
            ("protected_roots (cached, fingerprint checked)", _protected.protected_roots), 300)  # fmt: skip
    data = os.urandom(64 * 1024)
    path = os.path.join(ws, "data.bin")
    fileio.atomic_write(path, data)

    def plain_read() -> bytes:
        with open(path, "rb") as fh:
            return fh.read()

    def nofollow_read() -> bytes:
        with os.fdopen(fileio.open_nofollow(path), "rb") as fh:
            return fh.read()

    compare("read 64 KB", ("open()", plain_read), ("open_nofollow", nofollow_read), 300)
    compare("atomic write 64 KB (no fsync)", ("atomic_write", lambda: fileio.atomic_write(path, data, fsync=False)),
            ("atomic_write_nofollow", lambda: fileio.atomic_write_nofollow(path, data, fsync=False)), 200)  # fmt: skip
    print(f"openat2 available: {fileio._openat2_call() is not None}")


if __name__ == "__main__":
    main()
