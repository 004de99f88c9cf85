"""The full call pipeline against ``handler(**json.loads(s))``, interleaved in one run; and ``call_many``.

Targets: with validation and no hooks at most 2x the raw call; with 2 pre + 2 post no-op hooks at most 3x.
``call_many`` of 8 read-only tools that each wait 100 ms: under 150 ms; 64 of them with ``max_parallel=64``:
about one wait (the default pool is 32 wide, which takes two).
Run: ``python benchmarks/bench_pipeline.py [rounds]``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import interleave, line, ratio

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))

from hermes_core import ToolSystem, hookimpl

SCHEMA = {
    "name": "add",
    "description": "Add two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}
RAW = '{"a": 1, "b": 2}'


def add(a: int, b: int) -> int:
    return a + b


class NoOp:
    @hookimpl
    def pre_tool_call(self, name, arguments):
        return None

    @hookimpl
    def post_tool_call(self, name, outcome):
        return None


def build(*plugins: object) -> ToolSystem:
    system = ToolSystem.load(plugins_dir=False, load_entry_points=False, plugins=plugins)
    system.registry.register(name="add", toolset="math", schema=SCHEMA, handler=add)
    assert system.call("add", RAW) == "3"
    return system


def timed_call_many(system: ToolSystem, calls: list, **kwargs: object) -> float:
    start = time.perf_counter()
    out = system.call_many(calls, **kwargs)
    elapsed = (time.perf_counter() - start) * 1000
    assert out == [str(c[1]["i"]) for c in calls], out
    return elapsed


def main(rounds: int = 15, number: int = 20_000) -> None:
    plain = build()
    hooked = build(NoOp(), NoOp())
    loads = json.loads
    samples = interleave(
        {
            "raw": lambda: add(**loads(RAW)),
            "plain": lambda: plain.call("add", RAW),
            "hooked": lambda: hooked.call("add", RAW),
        },
        number,
        rounds,
    )
    raw = samples["raw"]
    print(f"{rounds} interleaved rounds of {number} calls each")
    print(line("raw handler(**json.loads(s))", raw, "us", 1000))
    for label, key, target in (
        ("pipeline, validation, no hooks", "plain", 2),
        ("pipeline, validation, 2 pre + 2 post", "hooked", 3),
    ):
        lo, mid = ratio(samples[key], raw)
        print(
            line(
                label,
                samples[key],
                "us",
                1000,
                f"  ratio min {lo:.2f}x median {mid:.2f}x (target <= {target}x)",
            )
        )

    def wait(i: int) -> int:
        time.sleep(0.1)
        return i

    plain.registry.register(
        name="wait",
        toolset="t",
        handler=wait,
        parallel_safe=True,
        schema={"name": "wait", "parameters": {"type": "object", "properties": {"i": {"type": "integer"}}}},
    )
    eight = [("wait", {"i": i}) for i in range(8)]
    many = [("wait", {"i": i}) for i in range(64)]
    timed_call_many(plain, eight)  # starts the pool's threads
    runs: dict[str, list[float]] = {"8": [], "64 default": [], "64 max_parallel=64": []}
    for _ in range(3):
        runs["8"].append(timed_call_many(plain, eight))
        runs["64 default"].append(timed_call_many(plain, many))
        runs["64 max_parallel=64"].append(timed_call_many(plain, many, max_parallel=64))
    print(
        line("call_many, 8 x 100 ms waits", runs["8"], "ms", extra="  (sequential 800 ms; target < 150 ms)")
    )
    print(line("call_many, 64 x 100 ms, default width", runs["64 default"], "ms"))
    print(
        line(
            "call_many, 64 x 100 ms, max_parallel 64",
            runs["64 max_parallel=64"],
            "ms",
            extra="  (target ~100 ms)",
        )
    )
    plain.close()
    hooked.close()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
