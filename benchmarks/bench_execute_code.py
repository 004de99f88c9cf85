"""``execute_code "print(1)"`` through the whole pipeline in a warm session, against ``python -c "print(1)"``.

The baseline is a fresh ``python -c "print(1)"`` of the same interpreter, unsandboxed; the subject is the tool in
a session that has run a script before (its private folder, bootstrap and, with bwrap, its warm interpreter
inside the walls exist): the script's process, the bridge socket, the pipeline and the result, all included. The two alternate
call after call. Target: at most 1.5x ``python -c``. Run: ``python benchmarks/bench_execute_code.py [rounds]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.sandbox import sandbox_for


def main(rounds: int = 40) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="hermes-bench-ws-"))
    system = ToolSystem.load(
        plugins_dir=False, load_entry_points=False, plugins=[hermes_builtin.plugin], workspace=workspace
    )
    first = json.loads(system.call("execute_code", {"code": "print(1)"}))
    assert first["stdout"] == "1\n", first
    python = [sys.executable, "-c", "print(1)"]
    times: dict[str, list[float]] = {"python -c": [], "execute_code": []}
    for r in range(rounds):
        for label in ("python -c", "execute_code") if r % 2 == 0 else ("execute_code", "python -c"):
            start = time.perf_counter()
            if label == "python -c":
                subprocess.run(python, stdout=subprocess.DEVNULL, check=True, cwd=workspace)
            else:
                system.call("execute_code", {"code": "print(1)"})
            times[label].append((time.perf_counter() - start) * 1000)
    base, sub = times["python -c"], times["execute_code"]
    print(f'execute_code "print(1)" in a warm session, {rounds} interleaved rounds ({sys.executable})')
    print(f"sandbox backend: {sandbox_for(system).backend}")
    for label, values in times.items():
        print(f"{label:14s}: min {min(values):7.2f} ms  median {statistics.median(values):7.2f} ms")
    lo, mid = min(sub) / min(base), statistics.median(sub) / statistics.median(base)
    print(f"execute_code / python -c: min {lo:.2f}x  median {mid:.2f}x  (target <= 1.5x)")
    system.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
