"""Small helpers shared by the benchmark scripts (timing of subprocesses and functions)."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable, Mapping


def run_ms(cmd: list[str], env: Mapping[str, str], repeat: int) -> list[float]:
    """Wall time in ms of running ``cmd`` ``repeat`` times."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, env=dict(env), check=True, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1000)
    return times


def per_call_ns(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    """Best-of-``repeat`` nanoseconds per call of ``fn`` over ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / number)
    return best


def median(values: list[float]) -> float:
    return statistics.median(values)
