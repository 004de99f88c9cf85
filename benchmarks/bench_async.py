"""Async handlers: native ``await acall()`` against the raw awaited handler, and sync callers reaching an async
handler (the bridge) against the same call of a sync handler, each pair interleaved in one run.

Targets: native ``acall`` at most 2x the raw ``await handler(**json.loads(s))`` plus 15 us; the same ``acall`` on a
system that bridged a sync ``call()`` to an async handler before (its private loop ran first) within 10% of one
that never did; the bridge at most 25 us over the sync path, from the main thread, a worker thread and inside a
running loop. ``asyncio.run``
per call is printed for scale. Run: ``python benchmarks/bench_async.py [rounds]``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import interleave, line, per_call_ns

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))

from hermes_core import ToolSystem

SCHEMA = {
    "name": "x",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}
RAW = '{"a": 1, "b": 2}'


async def add_async(a: int, b: int) -> int:
    await asyncio.sleep(0)  # a real suspension, like any I/O-bound handler
    return a + b


def add_sync(a: int, b: int) -> int:
    return a + b


def build() -> ToolSystem:
    system = ToolSystem.load(plugins_dir=False, load_entry_points=False)
    system.registry.register(name="aadd", toolset="t", schema={**SCHEMA, "name": "aadd"}, handler=add_async)
    system.registry.register(name="sadd", toolset="t", schema={**SCHEMA, "name": "sadd"}, handler=add_sync)
    return system


def native(rounds: int, number: int) -> None:
    """``await system.acall`` and the raw awaited handler, interleaved inside one running loop."""
    system = build()
    loads = json.loads

    async def main() -> dict[str, list[float]]:
        async def raw() -> None:
            await add_async(**loads(RAW))

        async def via_acall() -> None:
            await system.acall("aadd", RAW)

        assert await system.acall("aadd", RAW) == "3"
        samples: dict[str, list[float]] = {"raw": [], "acall": []}
        subjects = {"raw": raw, "acall": via_acall}
        for r in range(rounds):
            for label in ["raw", "acall"] if r % 2 == 0 else ["acall", "raw"]:
                start = time.perf_counter_ns()
                for _ in range(number):
                    await subjects[label]()
                samples[label].append((time.perf_counter_ns() - start) / number)
        return samples

    samples = asyncio.run(main())
    raw, sub = samples["raw"], samples["acall"]
    budget = [2 * r + 15_000 for r in raw]
    print(line("raw await handler(**json.loads(s))", raw, "us", 1000))
    print(
        line(
            "native await acall()",
            sub,
            "us",
            1000,
            f"  budget 2x raw + 15 us = {min(budget) / 1000:.1f} / {statistics.median(budget) / 1000:.1f} us",
        )
    )
    system.close()


def after_bridge(rounds: int, number: int) -> None:
    """``await acall()`` on a system whose sync ``call()`` ran an async handler first (the bridge's private loop
    ran), against a system that never bridged, interleaved inside one running loop."""
    fresh, bridged = build(), build()
    assert bridged.call("aadd", RAW) == "3"  # a sync bridge: the private loop runs the handler

    async def main() -> dict[str, list[float]]:
        async def before() -> None:
            await fresh.acall("aadd", RAW)

        async def after() -> None:
            await bridged.acall("aadd", RAW)

        subjects = {"never bridged": before, "after a sync bridge": after}
        samples: dict[str, list[float]] = {label: [] for label in subjects}
        for fn in subjects.values():
            for _ in range(number // 10):
                await fn()
        for r in range(rounds):
            for label in list(subjects) if r % 2 == 0 else list(subjects)[::-1]:
                start = time.process_time_ns()  # CPU time: a thread hop shows even when the machine is idle
                for _ in range(number):
                    await subjects[label]()
                samples[label].append((time.process_time_ns() - start) / number)
        return samples

    samples = asyncio.run(main())
    base, sub = samples["never bridged"], samples["after a sync bridge"]
    lo, mid = min(sub) / min(base), statistics.median(sub) / statistics.median(base)
    print(line("await acall(), never bridged (CPU)", base, "us", 1000))
    print(
        line(
            "await acall(), after a sync bridge",
            sub,
            "us",
            1000,
            f"  {lo:.2f}x / {mid:.2f}x (target <= 1.10x)",
        )
    )
    fresh.close()
    bridged.close()


def in_thread(fn: Callable[[], dict[str, list[float]]]) -> dict[str, list[float]]:
    box: list[dict[str, list[float]]] = []
    t = threading.Thread(target=lambda: box.append(fn()))
    t.start()
    t.join()
    return box[0]


def in_loop(fn: Callable[[], dict[str, list[float]]]) -> dict[str, list[float]]:
    async def main() -> dict[str, list[float]]:
        return fn()

    return asyncio.run(main())


def bridge(rounds: int, number: int) -> None:
    """A sync ``call()`` of the async handler against the same call of the sync handler."""
    system = build()
    assert system.call("aadd", RAW) == system.call("sadd", RAW) == "3"

    def pair() -> dict[str, list[float]]:
        return interleave(
            {"sync": lambda: system.call("sadd", RAW), "async": lambda: system.call("aadd", RAW)},
            number,
            rounds,
        )

    print(
        f"{'asyncio.run per call (for scale)':38s}: {per_call_ns(lambda: asyncio.run(add_async(1, 2)), 300) / 1000:9.2f} us"
    )
    for label, samples in (
        ("main thread", pair()),
        ("worker thread", in_thread(pair)),
        ("inside a running loop", in_loop(pair)),
    ):
        over = [a - s for a, s in zip(samples["async"], samples["sync"], strict=True)]
        print(
            line(
                f"bridge overhead, {label}",
                over,
                "us",
                1000,
                f"  (async {min(samples['async']) / 1000:.1f} us, sync {min(samples['sync']) / 1000:.1f} us min;"
                " target <= 25 us)",
            )
        )
    time.sleep(0.01)
    system.close()


def main(rounds: int = 15) -> None:
    native(rounds, 2000)
    after_bridge(rounds, 2000)
    bridge(rounds, 2000)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
