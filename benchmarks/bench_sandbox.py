"""A sandboxed ``true`` through the whole pipeline (``terminal``) against the same call with no sandbox.

Target (issue 10): at most 10 ms more than the unsandboxed call. Systems are loaded once; calls alternate
between them (interleaved), so machine noise hits both sides alike. Prints min and median per backend,
the difference to ``none`` and the ratio. Run: ``python benchmarks/bench_sandbox.py [rounds]``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.sandbox import choose_backend


def build(backend: str, workspace: Path) -> ToolSystem:
    system = ToolSystem.load(
        plugins_dir=False,
        load_entry_points=False,
        plugins=[hermes_builtin.plugin],
        workspace=workspace,
        config={"sandbox": {"backend": backend}},
    )
    out = system.call("terminal", {"command": "true"})
    assert "[exit code 0;" in out, (backend, out)
    return system


def main(rounds: int = 200) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="hermes-bench-ws-"))
    backends = ["none"] + [b for b in ("bwrap", "landlock") if choose_backend(b).backend is not None]
    systems = {b: build(b, workspace) for b in backends}
    times: dict[str, list[float]] = {b: [] for b in backends}
    for _ in range(rounds):
        for backend, system in systems.items():
            start = time.perf_counter()
            system.call("terminal", {"command": "true"})
            times[backend].append((time.perf_counter() - start) * 1000)
    base_min, base_med = min(times["none"]), statistics.median(times["none"])
    print(f"terminal {{'command': 'true'}} through the pipeline, {rounds} interleaved rounds")
    print(f"{'backend':<9} {'min ms':>8} {'median ms':>10} {'+median ms':>11} {'ratio':>6}")
    for backend in backends:
        lo, med = min(times[backend]), statistics.median(times[backend])
        extra = med - base_med
        note = (
            ""
            if backend == "none"
            else ("  (target <= +10 ms)" if extra <= 10 else "  (OVER the +10 ms target)")
        )
        print(f"{backend:<9} {lo:8.2f} {med:10.2f} {extra:+11.2f} {med / base_med:6.2f}{note}")
    print(f"min difference bwrap-none: {min(times.get('bwrap', [base_min])) - base_min:+.2f} ms")
    for system in systems.values():
        system.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
