"""A sync caller reaching an async handler: the bridge's overhead from the main thread, a worker thread and
inside a running event loop, side by side with ``asyncio.run`` per call and a plain
``run_coroutine_threadsafe`` hand-off.

Targets (issue 3): at most 30 us overhead from the main thread and worker threads, at most 50 us inside a
running loop.  Overhead = (pipeline call of the async handler) - (pipeline call of the same sync handler).
Run: ``python benchmarks/bench_async.py``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import per_call_ns

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


def in_thread(fn, number: int) -> float:
    box: list[float] = []
    t = threading.Thread(target=lambda: box.append(per_call_ns(fn, number)))
    t.start()
    t.join()
    return box[0]


def in_loop(fn, number: int) -> float:
    async def main() -> float:
        return per_call_ns(fn, number)

    return asyncio.run(main())


def main(number: int = 3000) -> None:
    system = ToolSystem.load(plugins_dir=False, load_entry_points=False)
    system.registry.register(name="aadd", toolset="t", schema={**SCHEMA, "name": "aadd"}, handler=add_async)
    system.registry.register(name="sadd", toolset="t", schema={**SCHEMA, "name": "sadd"}, handler=add_sync)
    assert system.call("aadd", RAW) == system.call("sadd", RAW) == "3"

    def a_call() -> str:
        return system.call("aadd", RAW)

    def s_call() -> str:
        return system.call("sadd", RAW)

    # baselines: what others do per call
    run_per_call = per_call_ns(lambda: asyncio.run(add_async(1, 2)), number // 3)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    handoff = per_call_ns(lambda: asyncio.run_coroutine_threadsafe(add_async(1, 2), loop).result(), number)
    loop.call_soon_threadsafe(loop.stop)

    rows = [
        ("main thread", per_call_ns(a_call, number), per_call_ns(s_call, number), 30),
        ("worker thread", in_thread(a_call, number), in_thread(s_call, number), 30),
        ("inside a running loop", in_loop(a_call, number), in_loop(s_call, number), 50),
    ]
    print(f"asyncio.run per call                 : {run_per_call / 1000:7.1f} us")
    print(f"run_coroutine_threadsafe hand-off     : {handoff / 1000:7.1f} us")
    for label, a, s, target in rows:
        overhead = (a - s) / 1000
        print(
            f"bridge overhead, {label:21s}: {overhead:7.1f} us (async call {a / 1000:.1f} us, sync {s / 1000:.1f} us; "
            f"target <= {target} us; {run_per_call / 1000 / max(overhead, 0.001):.0f}x cheaper than asyncio.run)"
        )
    time.sleep(0.01)
    system.close()


if __name__ == "__main__":
    main()
