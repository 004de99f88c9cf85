"""Helpers shared by the benchmark scripts: interleaved timing of functions and of fresh processes.

Every measurement runs its baseline and its subjects in alternation, round after round (the order rotates each
round), so a noisy neighbour on a shared machine slows both sides alike; each side reports the min and the
median over the rounds, and ratios are taken between like statistics. ``HERMES_BENCH_CLOCK=cpu`` times the
per-call loops in process CPU time instead of wall time.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

# HERMES_BENCH_CLOCK=cpu times per-call loops in CPU time of the process (time.process_time_ns) instead of wall
# time: on a machine shared with other work, what a neighbour takes from the CPU then never counts.
_clock = time.process_time_ns if os.environ.get("HERMES_BENCH_CLOCK") == "cpu" else time.perf_counter_ns


def per_call_ns(fn: Callable[[], object], number: int) -> float:
    """Nanoseconds per call of ``fn`` over ``number`` calls (one sample; see ``HERMES_BENCH_CLOCK``)."""
    start = _clock()
    for _ in range(number):
        fn()
    return (_clock() - start) / number


def interleave(
    subjects: Mapping[str, Callable[[], object]], number: int, rounds: int = 15
) -> dict[str, list[float]]:
    """``{label: [ns per call, one per round]}``: every round times each subject once, in a rotating order."""
    labels = list(subjects)
    samples: dict[str, list[float]] = {label: [] for label in labels}
    for label in labels:  # warm up: caches, compiled runtimes, first-call imports
        per_call_ns(subjects[label], max(1, number // 10))
    for r in range(rounds):
        order = labels[r % len(labels) :] + labels[: r % len(labels)]
        for label in order:
            samples[label].append(per_call_ns(subjects[label], number))
    return samples


def interleave_processes(
    commands: Mapping[str, Sequence[str]],
    env: Mapping[str, str],
    rounds: int,
    cwd: str | None = None,
    before: Mapping[str, Callable[[], object]] | None = None,
) -> dict[str, list[float]]:
    """``{label: [wall ms of one fresh process, one per round]}``, the commands run in alternation.

    ``cwd`` should be a scratch directory: ``python -c`` puts it first on ``sys.path``, so a source tree there
    would shadow the installed package. ``before[label]()`` runs (untimed) before each of that label's runs.
    """
    labels = list(commands)
    samples: dict[str, list[float]] = {label: [] for label in labels}
    for r in range(rounds):
        order = labels[r % len(labels) :] + labels[: r % len(labels)]
        for label in order:
            if before and label in before:
                before[label]()
            start = time.perf_counter()
            subprocess.run(
                list(commands[label]), env=dict(env), check=True, stdout=subprocess.DEVNULL, cwd=cwd
            )
            samples[label].append((time.perf_counter() - start) * 1000)
    return samples


def run_ms(cmd: list[str], env: Mapping[str, str], repeat: int, cwd: str | None = None) -> list[float]:
    """Wall time in ms of running ``cmd`` ``repeat`` times (for set-up runs; measure with interleave_processes)."""
    return interleave_processes({"cmd": cmd}, env, repeat, cwd)["cmd"]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def stats(values: Sequence[float]) -> tuple[float, float]:
    """``(min, median)``."""
    return min(values), statistics.median(values)


def line(label: str, values: Sequence[float], unit: str, scale: float = 1.0, extra: str = "") -> str:
    """``label : min X unit  median Y unit  extra``; ``scale`` divides the raw values (1000 turns ns into us)."""
    lo, mid = stats(values)
    return f"{label:38s}: min {lo / scale:9.2f} {unit}  median {mid / scale:9.2f} {unit}{extra}"


def ratio(subject: Sequence[float], baseline: Sequence[float]) -> tuple[float, float]:
    """``(min ratio, median ratio)`` of two sample lists."""
    return min(subject) / min(baseline), statistics.median(subject) / statistics.median(baseline)


def rounds_and_baseline(argv: Sequence[str]) -> tuple[list[int], str | None]:
    """``[rounds]`` and the ``--baseline PYTHON`` (another install to measure beside this one) of a command line."""
    args = list(argv)
    baseline = None
    if "--baseline" in args:
        at = args.index("--baseline")
        baseline = args[at + 1]
        del args[at : at + 2]
    return [int(a) for a in args[:1]], baseline
