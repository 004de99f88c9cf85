"""Drop-in loading at scale: the cost per file of loading 1,000, 4,000 and 16,000 drop-in files, in fresh processes.

Each sample is one fresh process that loads a system from a drop-in folder of N one-tool files (warm caches:
bytecode and the scan's verdict cache are written by an untimed first run) and prints how long
``ToolSystem.load`` took; the empty folder is the baseline, and the cost per file is
``(load of N - load of none) / N``, taken within the same round. The four sizes alternate round after round.
The wall time of each whole process is printed too (it adds the interpreter's start and its teardown, which
frees every module: about 20 us more per file, also linear). Target: the cost per file flat, within 20% from 1k to 16k files (loading is
linear: each plugin's tools are indexed as they register, never found again by a scan of the whole registry).
Run: ``python benchmarks/bench_dropins.py [rounds]``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import run_ms

SIZES = (1_000, 4_000, 16_000)
PLUGIN = """from hermes_core import registry


def handler(a: int) -> int:
    return a


registry.register(
    name="dropin_{i}",
    toolset="dropins",
    schema={{"name": "dropin_{i}", "description": "Drop-in tool {i}.",
            "parameters": {{"type": "object", "properties": {{"a": {{"type": "integer"}}}}, "required": ["a"]}}}},
    handler=handler,
)
"""
LOAD = (
    "import sys, time; from hermes_core import ToolSystem; t = time.perf_counter(); "
    "s = ToolSystem.load(plugins_dir=sys.argv[1], load_entry_points=False); "
    "print((time.perf_counter() - t) * 1000); assert len(s.registry) == int(sys.argv[2]), len(s.registry)"
)


def interleave_loads(
    commands: dict[str, list[str]], env: dict[str, str], rounds: int, cwd: str
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """``({label: [load ms]}, {label: [process wall ms]})``, one fresh process per sample, in alternation."""
    loads: dict[str, list[float]] = {label: [] for label in commands}
    walls: dict[str, list[float]] = {label: [] for label in commands}
    labels = list(commands)
    for r in range(rounds):
        for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
            start = time.perf_counter()
            out = subprocess.run(
                commands[label], env=env, cwd=cwd, check=True, capture_output=True, text=True
            )
            walls[label].append((time.perf_counter() - start) * 1000)
            loads[label].append(float(out.stdout.split()[-1]))
    return loads, walls


def main(rounds: int = 7) -> None:
    home = Path(tempfile.mkdtemp(prefix="hermes-bench-dropins-"))
    env = {**os.environ, "HERMES_HOME": str(home)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's machine keeps bytecode
    python = sys.executable
    commands: dict[str, list[str]] = {}
    for n in (0, *SIZES):
        folder = home / f"dropins-{n}"
        folder.mkdir()
        for i in range(n):
            (folder / f"plugin_{i:05d}.py").write_text(PLUGIN.format(i=i))
        commands[str(n)] = [python, "-c", LOAD, str(folder), str(n)]
        run_ms(commands[str(n)], env, 1, str(home))  # bytecode and the scan's verdict cache
    samples, walls = interleave_loads(commands, env, rounds, str(home))
    base = samples["0"]
    print(f"{rounds} rounds, each sample a fresh process loading the folder ({python})")
    print(
        f"{'no drop-in files (baseline)':24s}: load min {min(base):7.1f} ms  median {statistics.median(base):7.1f} ms"
        f"  (process: median {statistics.median(walls['0']):6.0f} ms)"
    )
    per_file: dict[int, list[float]] = {}
    for n in SIZES:
        per_file[n] = [(s - b) * 1000 / n for s, b in zip(samples[str(n)], base, strict=True)]
        total = samples[str(n)]
        print(
            f"{f'{n:,} drop-in files':24s}: load min {min(total):7.1f} ms  median {statistics.median(total):7.1f} ms"
            f"  per file: min {min(per_file[n]):6.1f} us  median {statistics.median(per_file[n]):6.1f} us"
            f"  (process: median {statistics.median(walls[str(n)]):6.0f} ms)"
        )
    first, last = per_file[SIZES[0]], per_file[SIZES[-1]]
    print(
        f"per-file cost at {SIZES[-1]:,} / at {SIZES[0]:,}: min {min(last) / min(first):.2f}x  "
        f"median {statistics.median(last) / statistics.median(first):.2f}x  (target: within 20%, 0.8-1.2x)"
    )
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
